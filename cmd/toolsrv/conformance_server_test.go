package main

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// The official MCP conformance suite against "toolsrv mcp --listen", for
// each revision it scores (--requirements): every scenario passes but
// those listed, with their reasons, in
// testdata/conformance/server-REVISION.yml (the suite's fixtures, which
// toolsrv does not have: tools such as test_simple_text, resources,
// prompts, completions; optional extensions). A scenario that fails and is
// not listed fails the test, and so does one listed that passes.
//
// The suite reaches toolsrv through a small proxy of this test's that
// adds the bearer token to every request (the suite sends none); it
// forwards each request's Host as it came, so that the suite's DNS
// rebinding probes reach toolsrv as they were sent.
func TestConformanceServer(t *testing.T) {
	testdeps.Long(t, "two runs of the conformance suite, about 60 scenarios each")
	suite := findConformance(t)
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	const token = "conformance-token-0123456789abcdef"
	srv := startMCPListen(t, bin, []string{"TOOLSRV_MCP_TOKEN=" + token}, "--tools", tools, "--workdir", mcpProject(t))
	proxy := bearerProxy(t, srv.url, token)

	for _, c := range []struct {
		revision string
		// mustPass are scenarios that must have run and passed.
		mustPass []string
	}{
		{"2025-11-25", []string{"server-initialize", "tools-list", "dns-rebinding-protection", "server-session-lifecycle", "server-sse-multiple-streams"}},
		{"2026-07-28", []string{"server-stateless", "caching", "tools-list", "dns-rebinding-protection"}},
	} {
		t.Run(c.revision, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			defer cancel()
			file, _ := filepath.Abs(filepath.Join("testdata", "conformance", "server-"+c.revision+".yml"))
			expected := expectedFailures(t, file, "server")
			run := suite.run(t, ctx, "server", "--url", proxy, "--requirements", c.revision, "--expected-failures", file)
			run.checkExpected(t, expected)
			for _, name := range c.mustPass {
				// It may fail no check but those that need the suite's
				// own diagnostic tools, each listed with its reason.
				if _, ok := run.scenarios[name]; !ok {
					t.Errorf("scenario %s did not run", name)
				}
				if _, ok := expected[name]; ok {
					t.Errorf("scenario %s must pass, and is listed as an expected failure", name)
				}
			}
			if t.Failed() {
				t.Logf("toolsrv's standard error:\n%s", tail(srv.stderr.String(), 40))
			}
		})
	}
}

// bearerProxy is a reverse proxy on loopback to target that adds the
// bearer token to every request and keeps its Host; it returns the URL
// to give clients in target's place.
func bearerProxy(t *testing.T, target, token string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: to.Scheme, Host: to.Host})
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // event streams as they come
		// (the suite drops streams it is done with: not news)
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: p}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + to.Path
}
