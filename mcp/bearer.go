package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/internal/token"
)

// Token is a bearer token the HTTP server takes, and who a request that
// carries it comes from.
type Token struct {
	// Secret is what the request's "Authorization: Bearer" header holds.
	Secret string
	// Principal names who holds it: what Principal reports to the
	// handlers of the requests that carry it (OwnerPrincipal for the one
	// token of "toolsrv mcp --listen").
	Principal string
}

// OwnerPrincipal is the principal of the token of the user who started
// the server.
const OwnerPrincipal = "owner"

// Principal is who sent req over HTTP: the principal of the bearer token
// it carried. It is "" for a request that came another way (standard
// input and output: from the user who started the server).
func Principal(req sdk.Request) string {
	if req == nil {
		return ""
	}
	if x := req.GetExtra(); x != nil && x.TokenInfo != nil {
		return x.TokenInfo.UserID
	}
	return ""
}

// bearer checks requests' bearer tokens: in constant time, against the
// hash of every token (so that neither the time taken nor an early exit
// tells how much of a guess was right, or which token it came near).
type bearer struct {
	tokens []tokenHash
	log    *slog.Logger
	// refusals are logged at most once a second, with the count of those
	// that were not: a client that knocks in a loop must not fill the log.
	refusals throttle
}

type tokenHash struct {
	sum       [sha256.Size]byte
	principal string
}

func newBearer(tokens []Token, log *slog.Logger) (*bearer, error) {
	if len(tokens) == 0 {
		return nil, errors.New("no bearer token: every request would be refused")
	}
	b := &bearer{log: log}
	for _, t := range tokens {
		if err := token.Check(t.Secret); err != nil {
			return nil, err
		}
		if t.Principal == "" {
			return nil, errors.New("a bearer token without a principal")
		}
		b.tokens = append(b.tokens, tokenHash{sum: sha256.Sum256([]byte(t.Secret)), principal: t.Principal})
	}
	return b, nil
}

// match is the principal of the token secret, or "".
func (b *bearer) match(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	who := ""
	for _, t := range b.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			who = t.principal
		}
	}
	return who
}

// verify is the SDK's TokenVerifier: the token info that reaches the
// handlers (its UserID is the principal; the SDK also keeps a session to
// the principal that opened it).
func (b *bearer) verify(_ context.Context, secret string, _ *http.Request) (*auth.TokenInfo, error) {
	who := b.match(secret)
	if who == "" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: who}, nil
}

// require passes on the requests that carry a token, with the SDK's token
// info in their context (auth.RequireBearerToken); the others get 401 with
// WWW-Authenticate: Bearer, and are logged without their body.
func (b *bearer) require(next http.Handler) http.Handler {
	inner := auth.RequireBearerToken(b.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why := ""
		scheme, secret, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		switch {
		case r.Header.Get("Authorization") == "":
			why = "no Authorization header"
		case !strings.EqualFold(scheme, "Bearer"):
			why = "the Authorization header is not a bearer token"
		case b.match(strings.TrimSpace(secret)) == "":
			why = "a wrong bearer token"
		}
		if why == "" {
			inner.ServeHTTP(w, r)
			return
		}
		b.refuse(r, why)
		// The connection ends with the answer: the body is not waited
		// for (net/http would read up to 256 KB of it, as slowly as a
		// client sends it, with no deadline: a connection that never
		// sends its declared body would be held for ever), nor is
		// another request taken on it.
		http.NewResponseController(w).SetReadDeadline(time.Now())
		w.Header().Set("Connection", "close")
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsrv"`)
		http.Error(w, "401 Unauthorized: this MCP server needs the header \"Authorization: Bearer TOKEN\", TOKEN being "+
			"the token toolsrv mcp --listen was given or made (it says where at start)", http.StatusUnauthorized)
	})
}

// refuse logs a refused request: who and why, never its body or header.
func (b *bearer) refuse(r *http.Request, why string) {
	if held, ok := b.refusals.pass(); ok {
		b.log.Warn("refused an MCP request: "+why, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "refusedMeanwhile", held)
	}
}

// throttle lets a log line through at most once a second, and counts the
// ones it held back meanwhile.
type throttle struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// pass reports whether to log now, and how many were held back since the
// last one logged.
func (th *throttle) pass() (held int, ok bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	now := time.Now()
	if !th.last.IsZero() && now.Sub(th.last) < time.Second {
		th.held++
		return 0, false
	}
	held, th.held, th.last = th.held, 0, now
	return held, true
}
