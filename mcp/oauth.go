package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// OAuth 2.1 for http servers that ask for it (an HTTP 401, or a 403 with
// insufficient_scope), as MCP's authorization specification has it. Where
// the server's authorization server is, and its endpoints, come from the
// server's protected resource metadata (RFC 9728: the resource it names
// must be the server's URL) and the authorization server's metadata (RFC
// 8414 or OpenID discovery: the issuer it names must be the one asked).
// Every token request names the server as its resource (RFC 8707), and
// the access token goes on the server's requests only: the transport
// follows no redirect to another origin (remoteClient).
//
//   - authorization_code (the default): a person logs in once with
//     "toolsrv mcp login NAME" (Login: PKCE S256, the redirect to a
//     loopback address, state and RFC 9207 iss checked); the tokens are
//     kept in TokenDir and refreshed (each new token saved). A server
//     process uses the saved login only (storedAuth): a server that asks
//     and has none, or refuses it, is an error saying to log in.
//   - client_credentials: toolsrv gets its token itself with the
//     configured client ID and secret whenever the server asks (ccAuth);
//     nothing is kept on disk.

// rejectedByTransport is the SDK's JSON-RPC error code of a request its
// HTTP transport could not send (an authorization that failed, among
// others): the error's own text says why.
const rejectedByTransport = -32005

// authTimeout bounds one request to an authorization server.
const authTimeout = 30 * time.Second

// authClient is the HTTP client of the requests to authorization servers
// (metadata, registration, tokens).
func authClient() *http.Client {
	return &http.Client{Timeout: authTimeout, CheckRedirect: sameOriginRedirect}
}

// authState is a provider's way to its server's tokens.
type authState struct {
	mu sync.Mutex
	// login is Login's handler (the interactive flow), used instead.
	login auth.OAuthHandler
	// cc is the client credentials handler, kept across connections.
	cc *ccAuth
}

// oauthHandler is the OAuth handler of a connection to the server, nil
// when it takes none.
func (p *Provider) oauthHandler() auth.OAuthHandler {
	o := p.cfg.OAuth
	if o == nil || p.cfg.Transport != HTTP {
		return nil
	}
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	switch {
	case p.auth.login != nil:
		return p.auth.login
	case o.Grant == GrantClientCredentials:
		if p.auth.cc == nil {
			p.auth.cc = &ccAuth{server: p.cfg.Name, cfg: o, client: authClient()}
		}
		return p.auth.cc
	}
	return p.storedAuth()
}

// tokens is the provider's token store, nil without a TokenDir.
func (p *Provider) tokens() *tokenStore {
	if p.opts.TokenDir == "" {
		return nil
	}
	return &tokenStore{dir: p.opts.TokenDir, me: os.Geteuid(), log: p.log}
}

// storedAuth is the handler of the server's saved login.
func (p *Provider) storedAuth() *storedAuth {
	a := &storedAuth{server: p.cfg.Name}
	store := p.tokens()
	if store == nil {
		a.why = "this command keeps no logins"
		return a
	}
	l, err := store.load(p.cfg.Name)
	switch {
	case err != nil:
		a.why = err.Error()
		p.log.Warn("the saved login cannot be used", "err", err)
	case l == nil:
	case l.Resource != p.cfg.URL:
		a.why = fmt.Sprintf("the saved login is for %s, not for this entry's url %s", l.Resource, p.cfg.URL)
	default:
		cfg := &oauth2.Config{ClientID: l.ClientID, ClientSecret: l.ClientSecret, Scopes: l.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: l.TokenURL, AuthStyle: l.AuthStyle}}
		// Refreshes outlive any one request: a background context
		// carrying the client.
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, authClient())
		a.ts = &savingSource{src: cfg.TokenSource(ctx, l.Token), store: *store, log: p.log, login: *l}
	}
	return a
}

// storedAuth is a server process's OAuth handler for the authorization
// code grant: the saved login's tokens (refreshed when they expire), and
// when the server asks anyway, an error saying to log in.
type storedAuth struct {
	server string
	ts     *savingSource // nil: no usable login
	why    string        // why there is no usable login
}

func (a *storedAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if a.ts == nil {
		return nil, nil
	}
	return a.ts, nil
}

func (a *storedAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	cs := drainChallenges(resp)
	scope := challengeParam(cs, "scope")
	if resp.StatusCode == http.StatusForbidden && challengeParam(cs, "error") != "insufficient_scope" {
		return nil // a refusal, not a question of authorization: the call fails with it
	}
	if a.ts != nil && scope != "" {
		a.ts.asked(validScopes(strings.Fields(scope)))
	}
	return &LoginNeededError{Server: a.server, Status: resp.StatusCode, Saved: a.ts != nil, Scope: scope, Why: a.why}
}

// LoginNeededError is a server asking for an authorization that toolsrv
// has no saved login for (or whose login it refused): a person must run
// "toolsrv mcp login SERVER".
type LoginNeededError struct {
	Server string
	Status int    // the HTTP status that asked (401, or 403)
	Saved  bool   // there is a saved login, which the server refused
	Scope  string // the scope the server asked for ("" when it did not say)
	Why    string // why a saved login could not be used
}

func (e *LoginNeededError) Error() string {
	var b strings.Builder
	switch {
	case e.Status == http.StatusForbidden:
		fmt.Fprintf(&b, "mcp server %s asks for more access than the saved login has (HTTP 403 insufficient_scope", e.Server)
		if e.Scope != "" {
			fmt.Fprintf(&b, ", scope %q, which the next login asks for too", e.Scope)
		}
		b.WriteString(")")
	case e.Saved:
		fmt.Fprintf(&b, "mcp server %s refused the saved login (HTTP %d: expired or revoked)", e.Server, e.Status)
	default:
		fmt.Fprintf(&b, "mcp server %s asks for authorization (HTTP %d) and there is no saved login", e.Server, e.Status)
	}
	if e.Why != "" {
		fmt.Fprintf(&b, " (%s)", e.Why)
	}
	fmt.Fprintf(&b, ": log in with \"toolsrv mcp login %s\" (with this --mcp-config)", e.Server)
	return b.String()
}

// drainChallenges reads the response's WWW-Authenticate challenges and
// closes its body.
func drainChallenges(resp *http.Response) []oauthex.Challenge {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	return cs
}

// challengeParam is a parameter of the Bearer challenge.
func challengeParam(cs []oauthex.Challenge, key string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[key] != "" {
			return c.Params[key]
		}
	}
	return ""
}

// ccAuth gets tokens with the client credentials grant (RFC 6749 §4.4,
// MCP's SEP-1046): the client ID and secret go to the token endpoint of
// the authorization server the server's metadata names (and only to the
// configured issuer's, when "issuer" is set).
type ccAuth struct {
	server string
	cfg    *OAuthConfig
	client *http.Client

	mu      sync.Mutex
	ts      oauth2.TokenSource
	granted []string
}

func (a *ccAuth) TokenSource(context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts == nil {
		return nil, nil
	}
	return a.ts, nil
}

func (a *ccAuth) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	cs := drainChallenges(resp)
	if resp.StatusCode == http.StatusForbidden && challengeParam(cs, "error") != "insufficient_scope" {
		return nil
	}
	prm, asm, err := discover(ctx, a.client, cs, req.URL.String())
	if err != nil {
		return fmt.Errorf("mcp server %s asks for authorization: %w", a.server, err)
	}
	if err := checkIssuer(a.cfg.Issuer, asm.Issuer); err != nil {
		return fmt.Errorf("mcp server %s: %w", a.server, err)
	}
	a.mu.Lock()
	granted := a.granted
	a.mu.Unlock()
	scopes := requestedScopes(a.cfg.Scopes, challengeParam(cs, "scope"), prm.ScopesSupported, granted)
	cfg := &clientcredentials.Config{ClientID: a.cfg.ClientID, ClientSecret: a.cfg.ClientSecret, TokenURL: asm.TokenEndpoint, Scopes: scopes,
		AuthStyle: tokenAuthStyle(asm.TokenEndpointAuthMethodsSupported), EndpointParams: url.Values{"resource": {prm.Resource}}}
	// Later tokens are fetched when this one expires, after this
	// request: a background context carrying the client.
	ts := cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, a.client))
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("mcp server %s: the client credentials grant at %s failed: %w", a.server, asm.TokenEndpoint, err)
	}
	a.mu.Lock()
	a.ts, a.granted = ts, scopes
	a.mu.Unlock()
	return nil
}

// discover finds the server's protected resource metadata and its
// authorization server's metadata, as the SDK's authorization code
// handler does: where the challenge points, else the well-known URL of
// the server's path, then of its root; without any, the server's origin
// is its authorization server (MCP 2025-03-26); without the
// authorization server's metadata, its default endpoints.
func discover(ctx context.Context, c *http.Client, cs []oauthex.Challenge, serverURL string) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, nil, err
	}
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	type candidate struct{ url, resource string }
	var cands []candidate
	if m := challengeParam(cs, "resource_metadata"); m != "" {
		cands = append(cands, candidate{m, serverURL})
	}
	at := root
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	cands = append(cands, candidate{at.String(), serverURL})
	at.Path = "/.well-known/oauth-protected-resource"
	cands = append(cands, candidate{at.String(), root.String()})
	var prm *oauthex.ProtectedResourceMetadata
	var errs []error
	for _, cd := range cands {
		m, err := oauthex.GetProtectedResourceMetadata(ctx, cd.url, cd.resource, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m == nil {
			continue
		}
		if len(m.AuthorizationServers) == 0 {
			return nil, nil, fmt.Errorf("its protected resource metadata (%s) names no authorization server", cd.url)
		}
		prm = m
		break
	}
	if prm == nil {
		if len(errs) == len(cands) && challengeParam(cs, "resource_metadata") != "" {
			return nil, nil, fmt.Errorf("its protected resource metadata cannot be used: %w", errors.Join(errs...))
		}
		prm = &oauthex.ProtectedResourceMetadata{Resource: serverURL, AuthorizationServers: []string{root.String()}}
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, c)
	if err != nil {
		return nil, nil, fmt.Errorf("the metadata of its authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: issuer, TokenEndpoint: strings.TrimRight(issuer, "/") + "/token"}
	}
	return prm, asm, nil
}

// checkIssuer refuses an authorization server other than the configured
// one (want "" takes any).
func checkIssuer(want, got string) error {
	if want == "" || strings.TrimRight(want, "/") == strings.TrimRight(got, "/") {
		return nil
	}
	return fmt.Errorf("its authorization server is %s, not the configured \"issuer\" %s: the client's credentials are not sent there", got, want)
}

// requestedScopes are the scopes to ask for: the configured ones, else
// the challenge's, else the metadata's; with those granted before (a
// step-up keeps them).
func requestedScopes(configured []string, challenge string, supported, granted []string) []string {
	want := configured
	if len(want) == 0 {
		want = strings.Fields(challenge)
	}
	if len(want) == 0 {
		want = supported
	}
	return addScopes(granted, want)
}

// addScopes is have with the scopes of more it lacks, in order.
func addScopes(have, more []string) []string {
	out := slices.Clone(have)
	for _, s := range more {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// maxScopes bounds the scopes kept of what a server asked for.
const maxScopes = 32

// validScopes are the scopes of list that are scope tokens (RFC 6749
// §3.3: printable ASCII but space, quote and backslash; at most 200
// bytes), at most maxScopes: what a server may make the next login ask
// for.
func validScopes(list []string) []string {
	var out []string
	for _, s := range list {
		ok := s != "" && len(s) <= 200 && len(out) < maxScopes
		for i := 0; ok && i < len(s); i++ {
			ok = s[i] > 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// tokenAuthStyle is how the client authenticates at the token endpoint:
// client_secret_post, else client_secret_basic, else what the library
// finds out.
func tokenAuthStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}
