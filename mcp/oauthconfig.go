package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The grants of OAuthConfig.Grant.
const (
	// GrantAuthorizationCode: a person logs in once ("toolsrv mcp login"),
	// in a browser (PKCE, a redirect to a loopback address); the tokens
	// are kept and refreshed.
	GrantAuthorizationCode = "authorization_code"
	// GrantClientCredentials: toolsrv gets its tokens itself with a
	// pre-registered client's ID and secret (headless use); nothing is
	// kept on disk.
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is an http server entry's "oauth": how toolsrv gets the
// access tokens the server asks for (OAuth 2.1 as MCP's authorization
// specification has it). The authorization server is found from the
// server's protected resource metadata (RFC 9728) and its own metadata
// (RFC 8414); the client is a client ID metadata document
// (ClientMetadataURL) where the authorization server supports them, else
// the pre-registered ClientID, else one registered dynamically (RFC 7591).
type OAuthConfig struct {
	// Grant is GrantAuthorizationCode (the default) or
	// GrantClientCredentials.
	Grant string
	// ClientID and ClientSecret are a pre-registered client
	// ("clientId", "clientSecret" or "clientSecretEnv": the environment
	// variable that holds it). The client credentials grant needs both.
	ClientID, ClientSecret string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// that names toolsrv's loopback redirect ("clientMetadataUrl").
	ClientMetadataURL string
	// Issuer, when set, is the only authorization server the client's
	// credentials are given to ("issuer").
	Issuer string
	// Scopes replace the scopes the server asks for ("scopes").
	Scopes []string
	// RedirectPort is the loopback port of the login's redirect
	// ("redirectPort"; 0: any free port), for a client registered with
	// one redirect URI.
	RedirectPort int
}

// oauthEntry is "oauth" as written.
type oauthEntry struct {
	Grant             string   `json:"grant"`
	ClientID          string   `json:"clientId"`
	ClientSecret      string   `json:"clientSecret"`
	ClientSecretEnv   string   `json:"clientSecretEnv"`
	ClientMetadataURL string   `json:"clientMetadataUrl"`
	Issuer            string   `json:"issuer"`
	Scopes            []string `json:"scopes"`
	RedirectPort      int      `json:"redirectPort"`
}

// parseOAuth reads a remote entry's "oauth": absent, null or true is
// OAuth with the defaults, false none, an object oauthEntry. An http
// server whose "headers" carry Authorization has its own credentials and
// no OAuth; an sse server takes none (the SDK's SSE transport has no
// OAuth).
func parseOAuth(raw json.RawMessage, sc *ServerConfig, getenv func(string) string) (*OAuthConfig, error) {
	t := bytes.TrimSpace(raw)
	explicit := len(t) > 0 && string(t) != "null" && string(t) != "true"
	if string(t) == "false" {
		return nil, nil
	}
	if sc.Transport != HTTP {
		if explicit {
			return nil, fmt.Errorf("\"oauth\" is for http (streamable HTTP) servers, not %s ones", sc.Transport)
		}
		return nil, nil
	}
	hasAuthHeader := false
	for k := range sc.Headers {
		hasAuthHeader = hasAuthHeader || http.CanonicalHeaderKey(k) == "Authorization"
	}
	if hasAuthHeader {
		if explicit {
			return nil, errors.New("both \"oauth\" and an Authorization header in \"headers\": give one (the header is a fixed credential; \"oauth\" gets tokens from the server's authorization server)")
		}
		return nil, nil
	}
	var e oauthEntry
	if explicit {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("\"oauth\": %v; want false or {\"grant\", \"clientId\", \"clientSecret\" or \"clientSecretEnv\", \"clientMetadataUrl\", \"issuer\", \"scopes\", \"redirectPort\"}", typeMsg(err))
		}
	}
	o := &OAuthConfig{Grant: e.Grant, ClientID: e.ClientID, ClientSecret: e.ClientSecret, ClientMetadataURL: e.ClientMetadataURL,
		Issuer: strings.TrimSpace(e.Issuer), Scopes: e.Scopes, RedirectPort: e.RedirectPort}
	switch o.Grant {
	case "":
		o.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode, GrantClientCredentials:
	default:
		return nil, fmt.Errorf("\"oauth\": \"grant\" %q: use %q (a person logs in with toolsrv mcp login) or %q (a client ID and secret, no person)", o.Grant, GrantAuthorizationCode, GrantClientCredentials)
	}
	if e.ClientSecretEnv != "" {
		if e.ClientSecret != "" {
			return nil, errors.New("\"oauth\": both \"clientSecret\" and \"clientSecretEnv\": give one")
		}
		if o.ClientSecret = getenv(e.ClientSecretEnv); o.ClientSecret == "" {
			return nil, fmt.Errorf("\"oauth\": \"clientSecretEnv\" names $%s, which is empty or unset: set it to the client secret", e.ClientSecretEnv)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return nil, errors.New("\"oauth\": a client secret without \"clientId\": give the client ID it belongs to")
	}
	if o.Grant == GrantClientCredentials && (o.ClientID == "" || o.ClientSecret == "") {
		return nil, errors.New("\"oauth\": the client_credentials grant needs \"clientId\" and \"clientSecret\" (or \"clientSecretEnv\") of a client registered with the authorization server")
	}
	if u := o.ClientMetadataURL; u != "" {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "https" || p.Host == "" || strings.Trim(p.Path, "/") == "" {
			return nil, fmt.Errorf("\"oauth\": \"clientMetadataUrl\" %q: want the https:// URL of a client ID metadata document, with a path", u)
		}
	}
	if o.Issuer != "" {
		if p, err := url.Parse(o.Issuer); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("\"oauth\": \"issuer\" %q: want the authorization server's issuer URL", o.Issuer)
		}
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return nil, fmt.Errorf("\"oauth\": scope %q: a scope is one word, without spaces or quotes", s)
		}
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		return nil, fmt.Errorf("\"oauth\": \"redirectPort\" %d: want a port number (1-65535), or 0 for any free port", o.RedirectPort)
	}
	return o, nil
}
