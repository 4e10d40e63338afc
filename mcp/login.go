package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolsrv/toolsrv/registry"
)

// DefaultLoginTimeout bounds a login: the person's time in the browser
// included.
const DefaultLoginTimeout = 5 * time.Minute

// LoginOptions configure Login.
type LoginOptions struct {
	// TokenDir is where the login is kept (DefaultTokenDir).
	TokenDir string
	// Open shows the person the authorization server's URL, and may open
	// their browser on it; it returns once it has.
	Open func(ctx context.Context, authURL string) error
	// Timeout bounds the login (DefaultLoginTimeout).
	Timeout time.Duration
	// Version is toolsrv's; Logger gets events (slog.Default()).
	Version string
	Logger  *slog.Logger
}

// LoginResult is what a login did.
type LoginResult struct {
	// Saved: the server asked for authorization, and the login is saved
	// in File. Not saved: the server did not ask (or, with the client
	// credentials grant, the token is not kept).
	Saved bool
	File  string
	// Authorized: toolsrv got a token (with either grant).
	Authorized bool
	// Expiry is when the access token expires (zero: not said); Refresh,
	// whether it can be refreshed without the person.
	Expiry  time.Time
	Refresh bool
	// Tools is the number of tools the server lists to toolsrv.
	Tools int
}

// Login authorizes toolsrv at an http server once, as a person: it
// connects, and when the server asks for authorization, finds its
// authorization server, registers toolsrv there if it must, and has
// Open show the person the authorization URL; the browser comes back to
// a listener on 127.0.0.1 (the "redirectPort", else any free port) with
// the code, which is exchanged (PKCE S256) for tokens, saved in TokenDir
// for the server's later connections. With the client credentials
// grant it only checks that toolsrv gets a token.
func Login(ctx context.Context, sc ServerConfig, o LoginOptions) (*LoginResult, error) {
	if sc.Transport != HTTP {
		return nil, fmt.Errorf("mcp server %s is a %s server: only http (streamable HTTP) servers log in with OAuth", sc.Name, sc.Transport)
	}
	if sc.OAuth == nil {
		return nil, fmt.Errorf("mcp server %s takes no OAuth (its entry says \"oauth\": false, or its \"headers\" carry an Authorization header)", sc.Name)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLoginTimeout
	}
	if o.TokenDir == "" {
		o.TokenDir = DefaultTokenDir(os.Getenv)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	sc.StartTimeout = 0 // the login's timeout bounds it
	p := NewProvider(sc, ProviderOptions{StartTimeout: o.Timeout, Version: o.Version, Logger: o.Logger, TokenDir: o.TokenDir})
	res := &LoginResult{}
	if sc.OAuth.Grant == GrantAuthorizationCode {
		if o.Open == nil {
			return nil, errors.New("no way to show the authorization URL (a bug: LoginOptions.Open is not set)")
		}
		lb, err := listenLoopback(sc.OAuth.RedirectPort)
		if err != nil {
			return nil, err
		}
		defer lb.close()
		h, err := p.loginHandler(lb, o, res)
		if err != nil {
			return nil, err
		}
		p.auth.login = h
	}
	conn, err := p.connect(ctx, make(chan struct{}, 1))
	if err != nil {
		return nil, err
	}
	defer conn.close()
	for _, err := range conn.sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: tools/list: %w", sc.Name, err)
		}
		res.Tools++
	}
	if cc := p.auth.cc; cc != nil {
		if ts, _ := cc.TokenSource(ctx); ts != nil {
			res.Authorized = true
			if t, err := ts.Token(); err == nil {
				res.Expiry = t.Expiry
			}
		}
	}
	return res, nil
}

// loginHandler is the SDK's authorization code handler for a login: the
// client is the client ID metadata document where the authorization
// server takes one, else the pre-registered client, else one registered
// dynamically (a public client with the loopback redirect); the tokens
// are saved as soon as they come.
func (p *Provider) loginHandler(lb *loopback, o LoginOptions, res *LoginResult) (auth.OAuthHandler, error) {
	oc := p.cfg.OAuth
	store := p.tokens()
	// What the saved login had, and what the server asked for since (a
	// step-up), are asked for again.
	var again []string
	if l, err := store.load(p.cfg.Name); err == nil && l != nil && l.Resource == p.cfg.URL {
		again = addScopes(l.Scopes, l.Asked)
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: lb.redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return lb.fetch(ctx, args.URL, o.Open)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{lb.redirect}, ClientName: "toolsrv", SoftwareID: "toolsrv", SoftwareVersion: o.Version,
			TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RequestRefreshToken: true,
		Client:              authClient(),
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			l := savedLogin{Server: p.cfg.Name, Resource: p.cfg.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Token: tok}
			if err := store.save(&l); err != nil {
				return nil, fmt.Errorf("saving the login: %w", err)
			}
			res.Saved, res.Authorized, res.File = true, true, store.path(p.cfg.Name)
			res.Expiry, res.Refresh = tok.Expiry, tok.RefreshToken != ""
			return &savingSource{src: c.TokenSource(ctx, tok), store: *store, log: p.log, login: l}, nil
		},
	}
	if oc.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: oc.ClientMetadataURL}
	}
	if oc.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: oc.ClientID, Issuer: oc.Issuer}
		if oc.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: oc.ClientSecret}
		}
	}
	cfg.ScopeFilter = func(discovered []string) []string {
		if len(oc.Scopes) > 0 {
			discovered = oc.Scopes
		}
		return addScopes(discovered, again)
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// Logout forgets the saved login of server (by name: its entry need not
// exist any more); false when there was none. It does not revoke the
// tokens at the authorization server.
func Logout(tokenDir, server string) (bool, error) {
	if err := registry.ValidName(server); err != nil {
		return false, fmt.Errorf("%q is not a server name: %w", server, err)
	}
	return tokenStore{dir: tokenDir}.forget(server)
}

// LoginFile is where server's login is kept in tokenDir.
func LoginFile(tokenDir, server string) string { return tokenStore{dir: tokenDir}.path(server) }

// loopback is the login's redirect target: an HTTP server on 127.0.0.1
// that takes the authorization server's answer for a state a login is
// waiting for, and nothing else.
type loopback struct {
	redirect string
	srv      *http.Server

	mu   sync.Mutex
	want map[string]chan callback // by state
}

// callback is the authorization server's answer, as the browser brought
// it.
type callback struct {
	code, state, iss string
	err              error
}

func listenLoopback(port int) (*loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the browser's return on 127.0.0.1:%d: %w", port, err)
	}
	lb := &loopback{redirect: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port), want: map[string]chan callback{}}
	lb.srv = &http.Server{Handler: lb, ReadHeaderTimeout: 10 * time.Second}
	go lb.srv.Serve(ln)
	return lb, nil
}

func (lb *loopback) close() { lb.srv.Close() }

func (lb *loopback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	lb.mu.Lock()
	ch := lb.want[state]
	if ch != nil {
		delete(lb.want, state)
	}
	lb.mu.Unlock()
	if state == "" || ch == nil {
		http.Error(w, "toolsrv: no login is waiting for this answer (its state is not the one sent).", http.StatusBadRequest)
		return
	}
	cb := callback{code: q.Get("code"), state: state, iss: q.Get("iss")}
	if e := q.Get("error"); e != "" {
		cb.err = fmt.Errorf("the authorization server refused the login: %q", e)
		if d := q.Get("error_description"); d != "" {
			cb.err = fmt.Errorf("%w: %q", cb.err, abbrev(d, 300))
		}
	} else if cb.code == "" {
		cb.err = errors.New("the authorization server's answer has no code")
	}
	ch <- cb // buffered, and taken out of want: one answer
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if cb.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintln(w, "toolsrv: the login was refused; the terminal says why. You may close this page.")
		return
	}
	fmt.Fprintln(w, "toolsrv: the authorization server answered; return to the terminal. You may close this page.")
}

// fetch has open show authURL, and waits for the browser to bring the
// answer for its state back.
func (lb *loopback) fetch(ctx context.Context, authURL string, open func(context.Context, string) error) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, errors.New("the authorization URL has no state (a bug)")
	}
	ch := make(chan callback, 1)
	lb.mu.Lock()
	lb.want[state] = ch
	lb.mu.Unlock()
	defer func() {
		lb.mu.Lock()
		delete(lb.want, state)
		lb.mu.Unlock()
	}()
	if err := open(ctx, authURL); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("the browser did not come back to %s: %w", lb.redirect, ctx.Err())
	case cb := <-ch:
		if cb.err != nil {
			return nil, cb.err
		}
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	}
}
