package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolsrv/toolsrv/exec"
)

// The tokens of these tests: distinctive, so that a log or an error that
// shows one is found.
const (
	testAccess  = "ACCESS-TOKEN-xyzzy-"
	testRefresh = "REFRESH-TOKEN-plugh-"
	testSecret  = "CLIENT-SECRET-frotz"
)

// authServer is an OAuth 2.1 authorization server for the tests (RFC 8414
// metadata, dynamic registration, the authorization endpoint redirecting
// at once as if the person allowed it, a token endpoint for the
// authorization code with PKCE S256, refresh and client credentials
// grants), and an MCP server it protects (RFC 9728 metadata, a bearer
// token required). Both check what the specifications require of the
// client and record what they got.
type authServer struct {
	t        *testing.T
	as, rs   *httptest.Server
	resource string // the MCP server's URL
	methods  []string

	mu          sync.Mutex
	n           int
	challenges  map[string]string // code → PKCE challenge
	valid       map[string]bool   // access tokens the MCP server takes
	refresh     map[string]bool
	grants      []url.Values // the token requests
	authorizeQ  []url.Values // the authorization requests
	seenBearers []string     // at the MCP server
	basic       []string     // client_secret_basic credentials at the token endpoint
}

func newAuthServer(t *testing.T, tokenAuthMethods ...string) *authServer {
	t.Helper()
	a := &authServer{t: t, methods: tokenAuthMethods, challenges: map[string]string{}, valid: map[string]bool{}, refresh: map[string]bool{}}
	a.as = httptest.NewServer(http.HandlerFunc(a.serveAS))
	t.Cleanup(a.as.Close)
	mux := http.NewServeMux()
	a.rs = httptest.NewServer(mux)
	t.Cleanup(a.rs.Close)
	a.resource = a.rs.URL + "/mcp"
	s := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "whoami", Description: "says hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}, nil
		})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.seenBearers = append(a.seenBearers, tok)
		if !a.valid[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	prm := a.rs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: a.resource, AuthorizationServers: []string{a.as.URL}, ScopesSupported: []string{"tools"}}))
	return a
}

func (a *authServer) serveAS(w http.ResponseWriter, r *http.Request) {
	jsonReply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	oauthErr := func(code int, e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":%q}`, e)
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		methods := a.methods
		if methods == nil {
			methods = []string{"none", "client_secret_basic"}
		}
		jsonReply(map[string]any{"issuer": a.as.URL, "authorization_endpoint": a.as.URL + "/authorize", "token_endpoint": a.as.URL + "/token",
			"registration_endpoint": a.as.URL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "refresh_token", "client_credentials"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": methods})
	case "/register":
		w.WriteHeader(http.StatusCreated)
		jsonReply(map[string]any{"client_id": "registered-client", "redirect_uris": []string{}})
	case "/authorize":
		q := r.URL.Query()
		a.mu.Lock()
		a.authorizeQ = append(a.authorizeQ, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.challenges[code] = q.Get("code_challenge")
		a.mu.Unlock()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != a.resource {
			http.Error(w, "want PKCE S256 and the resource", http.StatusBadRequest)
			return
		}
		to, _ := url.Parse(q.Get("redirect_uri"))
		back := to.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		to.RawQuery = back.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	case "/token":
		r.ParseForm()
		f := r.PostForm
		a.mu.Lock()
		defer a.mu.Unlock()
		a.grants = append(a.grants, f)
		if id, secret, ok := r.BasicAuth(); ok {
			a.basic = append(a.basic, id+":"+secret)
		}
		if f.Get("resource") != a.resource && f.Get("grant_type") != "refresh_token" {
			oauthErr(http.StatusBadRequest, "invalid_target")
			return
		}
		switch f.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if want, ok := a.challenges[f.Get("code")]; !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want {
				oauthErr(http.StatusBadRequest, "invalid_grant")
				return
			}
			delete(a.challenges, f.Get("code"))
		case "refresh_token":
			if !a.refresh[f.Get("refresh_token")] {
				oauthErr(http.StatusBadRequest, "invalid_grant")
				return
			}
			delete(a.refresh, f.Get("refresh_token"))
		case "client_credentials":
			if id, secret, _ := r.BasicAuth(); id != "cc-client" || secret != testSecret {
				oauthErr(http.StatusUnauthorized, "invalid_client")
				return
			}
		default:
			oauthErr(http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		a.n++
		access, refresh := testAccess+strconv.Itoa(a.n), testRefresh+strconv.Itoa(a.n)
		a.valid[access], a.refresh[refresh] = true, true
		jsonReply(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh})
	default:
		http.NotFound(w, r)
	}
}

// browser is the person's browser: it opens the address and follows the
// redirects, back to toolsrv's loopback listener.
func browser(t *testing.T) func(context.Context, string) error {
	return func(ctx context.Context, addr string) error {
		go func() {
			resp, err := http.Get(addr)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			resp.Body.Close()
		}()
		return nil
	}
}

// logBuffer is a logger at Debug that keeps what it logs.
func logBuffer() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// A person logs in once (PKCE S256, the redirect to 127.0.0.1, the
// resource named); the login is saved privately, and the server's later
// connections use it, refreshing the token when it expires (and saving
// the new one). No token is ever logged.
func TestLoginSavedAndUsed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	a := newAuthServer(t)
	dir := filepath.Join(t.TempDir(), "toolsrv", "mcp-tokens")
	log, logs := logBuffer()
	sc := ServerConfig{Name: "acme", Transport: HTTP, URL: a.resource, OAuth: &OAuthConfig{Grant: GrantAuthorizationCode}}
	res, err := Login(ctx, sc, LoginOptions{TokenDir: dir, Open: browser(t), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Saved || !res.Refresh || res.Tools != 1 || res.File != filepath.Join(dir, "acme.json") {
		t.Fatalf("login: %+v", res)
	}
	q := a.authorizeQ[0]
	if redirect, _ := url.Parse(q.Get("redirect_uri")); redirect == nil || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
		t.Errorf("redirect_uri %q, want one on 127.0.0.1", q.Get("redirect_uri"))
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, res.File: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, fi.Mode().Perm(), want)
		}
	}
	var saved savedLogin
	b, _ := os.ReadFile(res.File)
	if json.Unmarshal(b, &saved); saved.Resource != a.resource || saved.ClientID != "registered-client" || !strings.HasPrefix(saved.Token.AccessToken, testAccess) {
		t.Fatalf("saved login: %s", b)
	}

	// Later, the token has expired: the provider refreshes it.
	saved.Token.Expiry = time.Now().Add(-time.Minute)
	st := tokenStore{dir: dir, me: os.Geteuid(), log: quiet()}
	if err := st.save(&saved); err != nil {
		t.Fatal(err)
	}
	rp := runRemote(t, ctx, sc, ProviderOptions{TokenDir: dir, Logger: log})
	rp.waitTools(t, ctx)
	r, err := rp.Call(ctx, "whoami", []byte("{}"), exec.CallContext{})
	if err != nil || string(r.Stdout) != "hello" {
		t.Fatalf("call with the saved login: %v %+v", err, r)
	}
	now, err := st.load("acme")
	if err != nil || now.Token.AccessToken == saved.Token.AccessToken || now.Token.RefreshToken == saved.Token.RefreshToken {
		t.Errorf("after a refresh the file holds %+v (%v), want the new tokens", now.Token, err)
	}
	a.mu.Lock()
	last := a.seenBearers[len(a.seenBearers)-1]
	refreshes := 0
	for _, g := range a.grants {
		if g.Get("grant_type") == "refresh_token" {
			refreshes++
		}
	}
	a.mu.Unlock()
	if last != now.Token.AccessToken || refreshes != 1 {
		t.Errorf("the server last saw %q after %d refreshes, want the refreshed token after one", last, refreshes)
	}
	for _, secret := range []string{testAccess, testRefresh} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a token is in the log:\n%s", logs)
		}
	}
}

// A server that asks for authorization with no usable saved login says
// to log in, and why a saved login is not used: one saved for another URL
// never goes to this one.
func TestLoginNeeded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	a := newAuthServer(t)
	dir := filepath.Join(t.TempDir(), "toolsrv", "mcp-tokens")
	sc := ServerConfig{Name: "acme", Transport: HTTP, URL: a.resource, OAuth: &OAuthConfig{Grant: GrantAuthorizationCode}}
	unavailable := func(rp *remoteProvider) string {
		waitFor(t, ctx, "the server reported unavailable", func() bool { return rp.last().Unavailable != "" })
		return rp.last().Unavailable
	}
	rp := runRemote(t, ctx, sc, ProviderOptions{TokenDir: dir, MinBackoff: time.Hour})
	if why := unavailable(rp); !strings.Contains(why, `asks for authorization (HTTP 401) and there is no saved login: log in with "toolsrv mcp login acme"`) {
		t.Errorf("no login: %s", why)
	}
	st := tokenStore{dir: dir, me: os.Geteuid(), log: quiet()}
	if err := st.save(&savedLogin{Server: "acme", Resource: "https://elsewhere.example/mcp", TokenURL: a.as.URL + "/token",
		Token: &oauth2.Token{AccessToken: testAccess + "elsewhere", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	rp = runRemote(t, ctx, sc, ProviderOptions{TokenDir: dir, MinBackoff: time.Hour})
	if why := unavailable(rp); !strings.Contains(why, "the saved login is for https://elsewhere.example/mcp, not for this entry's url") {
		t.Errorf("a login for another URL: %s", why)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.seenBearers {
		if strings.Contains(b, "elsewhere") {
			t.Error("the token saved for another URL was sent to this server")
		}
	}
}

// With the client credentials grant, toolsrv gets its token itself: the
// client's ID and secret go to the token endpoint the server's metadata
// names (client_secret_basic, as the authorization server says), with
// the server as the resource; with "issuer" set, to that authorization
// server only.
func TestClientCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	a := newAuthServer(t, "client_secret_basic")
	cc := &OAuthConfig{Grant: GrantClientCredentials, ClientID: "cc-client", ClientSecret: testSecret}
	log, logs := logBuffer()
	rp := runRemote(t, ctx, ServerConfig{Name: "svc", URL: a.resource, OAuth: cc}, ProviderOptions{Logger: log})
	rp.waitTools(t, ctx)
	if r, err := rp.Call(ctx, "whoami", []byte("{}"), exec.CallContext{}); err != nil || string(r.Stdout) != "hello" {
		t.Fatalf("call: %v %+v", err, r)
	}
	a.mu.Lock()
	if len(a.grants) != 1 || a.grants[0].Get("grant_type") != "client_credentials" || a.grants[0].Get("resource") != a.resource ||
		len(a.basic) != 1 || a.basic[0] != "cc-client:"+testSecret || a.grants[0].Get("client_secret") != "" {
		t.Errorf("token requests %v (basic %v), want one client_credentials grant for the resource, with the secret in Basic authentication", a.grants, a.basic)
	}
	a.mu.Unlock()
	if strings.Contains(logs.String(), testSecret) || strings.Contains(logs.String(), testAccess) {
		t.Errorf("a secret is in the log:\n%s", logs)
	}

	// Bound to another issuer: the secret is not sent.
	b := newAuthServer(t, "client_secret_basic")
	bound := *cc
	bound.Issuer = "https://login.example"
	rp = runRemote(t, ctx, ServerConfig{Name: "svc", URL: b.resource, OAuth: &bound}, ProviderOptions{MinBackoff: time.Hour})
	waitFor(t, ctx, "the server reported unavailable", func() bool { return rp.last().Unavailable != "" })
	if why := rp.last().Unavailable; !strings.Contains(why, `not the configured "issuer" https://login.example`) {
		t.Errorf("another issuer: %s", why)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.grants) != 0 {
		t.Errorf("the client's credentials went to an authorization server other than the configured issuer: %v", b.grants)
	}
}

// The transport follows no redirect to another origin: the entry's
// headers (and an access token) reach the server only.
func TestNoRedirectElsewhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var got sync.Map
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store("request", r.Header.Get("Authorization"))
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	moved := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/mcp", http.StatusTemporaryRedirect))
	defer moved.Close()
	rp := runRemote(t, ctx, ServerConfig{Name: "moved", URL: moved.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + testAccess}},
		ProviderOptions{MinBackoff: time.Hour})
	waitFor(t, ctx, "the server reported unavailable", func() bool { return rp.last().Unavailable != "" })
	if why := rp.last().Unavailable; !strings.Contains(why, "another origin: not followed") {
		t.Errorf("unavailable: %s", why)
	}
	if h, ok := got.Load("request"); ok {
		t.Errorf("the other origin got a request (Authorization %q)", h)
	}
}

// The loopback listener takes the answer for the state it waits for only:
// another one is refused and the login goes on waiting; an error the
// authorization server sends back is said, quoted.
func TestLoopbackAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	lb, err := listenLoopback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.close()
	if u, _ := url.Parse(lb.redirect); u.Hostname() != "127.0.0.1" {
		t.Fatalf("redirect %s, want 127.0.0.1", lb.redirect)
	}
	back := func(q string) int {
		resp, err := http.Get(lb.redirect + "?" + q)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, answers string
		code          string
		err           string
	}{
		{name: "right state after a wrong one", answers: "state=forged&code=evil|state=S1&code=good", code: "good"},
		{name: "refused", answers: "state=S1&error=access_denied&error_description=no+%1b%5b2J+way", err: `refused the login: "access_denied": "no \x1b[2J way"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var codes []int
			done := make(chan struct{})
			open := func(context.Context, string) error {
				go func() {
					defer close(done)
					for _, q := range strings.Split(tc.answers, "|") {
						codes = append(codes, back(q))
					}
				}()
				return nil
			}
			res, err := lb.fetch(ctx, "https://as.example/authorize?state=S1", open)
			<-done
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case res.Code != tc.code || res.State != "S1":
				t.Errorf("result %+v", res)
			}
			if tc.err == "" && (len(codes) < 1 || codes[0] != http.StatusBadRequest) {
				t.Errorf("the forged answer got %v, want 400", codes)
			}
		})
	}
}

// Saved logins are private: a file others may read is made 0600 (and
// said), one of another user is refused (root only can make one).
func TestTokenStorePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "toolsrv", "mcp-tokens")
	log, logs := logBuffer()
	st := tokenStore{dir: dir, me: os.Geteuid(), log: log}
	if l, err := st.load("none"); l != nil || err != nil {
		t.Fatalf("no saved login: %v %v", l, err)
	}
	l := &savedLogin{Server: "acme", Resource: "https://acme.example/mcp", Token: &oauth2.Token{AccessToken: testAccess}}
	if err := st.save(l); err != nil {
		t.Fatal(err)
	}
	p := st.path("acme")
	os.Chmod(p, 0o644)
	if _, err := st.load("acme"); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 || !strings.Contains(logs.String(), "made "+p+" private") {
		t.Errorf("a saved login others could read: mode %v, log %q", fi.Mode().Perm(), logs)
	}
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		os.Chown(p, uid, -1)
		if _, err := st.load("acme"); err == nil || !strings.Contains(err.Error(), "not to this user") {
			t.Errorf("another user's saved login: %v", err)
		}
		os.Chown(p, 0, -1)
	}
	if gone, err := Logout(dir, "acme"); !gone || err != nil {
		t.Errorf("logout: %v %v", gone, err)
	}
	if gone, err := Logout(dir, "acme"); gone || err != nil {
		t.Errorf("logout again: %v %v", gone, err)
	}
	if _, err := Logout(dir, "../escape"); err == nil {
		t.Error("logout of a name that is a path")
	}
}
