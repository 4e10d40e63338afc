package exec

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
)

// BenchmarkCallOverhead measures one whole call of the same trivial tool
// (/bin/true, no output) through each path. The difference between
// "sandboxed" and "unsandboxed" is the sandbox's per-call cost: re-executing
// the helper, building the Landlock ruleset, the seccomp filter and the
// namespaces (PID, mount with the call's own /proc, IPC; user when not
// root). Set TOOLSRV_HELPER to a built toolsrv
// binary to measure with it as the helper instead of this test binary.
func BenchmarkCallOverhead(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	if h := os.Getenv("TOOLSRV_HELPER"); h != "" {
		self = h
	}
	tools, work := b.TempDir(), b.TempDir()
	os.WriteFile(tools+"/true.meta", []byte(`{"description":"does nothing","cmd":"/bin/true"}`), 0o644)
	os.WriteFile(tools+"/true_net.meta", []byte(`{"description":"does nothing","cmd":"/bin/true","network":true}`), 0o644)
	os.WriteFile(tools+"/true_host.meta", []byte(`{"description":"does nothing","cmd":"/bin/true","hostProcesses":true}`), 0o644)
	f := &fixture{t: b, tools: tools, work: work}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	noLandlock := func() (int, error) { return 0, errors.New("benchmark: unsandboxed baseline") }
	for _, c := range []struct {
		name string
		tool string
		opts Options
	}{
		{"unsandboxed", "true", Options{AllowUnsandboxed: true, landlockABI: noLandlock}},
		{"sandboxed-network", "true_net", Options{}},
		{"sandboxed-nonet-landlock+seccomp", "true", Options{Isolation: IsolationNone}},
		{"sandboxed-nonet-netns", "true", Options{}},
		// Without the PID and mount namespaces (and the /proc mount): what
		// they cost a call is the difference to the row above.
		{"sandboxed-nonet-hostProcesses", "true_host", Options{}},
		// A resident server's calls: each on a helper prepared for it
		// while the one before ran (Options.Prepare).
		{"sandboxed-prepared", "true", Options{Prepare: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.opts.SelfExe, c.opts.Logger = self, quiet
			r, err := NewRunner(c.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			tool := f.tool(c.tool)
			cc := CallContext{WorkDir: work}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Call(context.Background(), tool, []byte(`{}`), cc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
