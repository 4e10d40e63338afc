package exec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain_landlockAvailable(t *testing.T) {
	// Everything below needs the real sandbox; say so clearly if the
	// kernel lacks it instead of failing 20 tests obscurely.
	abi, err := LandlockABI()
	if err != nil || abi < 4 {
		t.Fatalf("these tests need Landlock ABI >= 4 (have %d, %v)", abi, err)
	}
}

func TestWriteInsideWorkDirAndTemp(t *testing.T) {
	f := newFixture(t)
	f.add("writer", `{"description":"writes in its working directory"}`,
		"#!/bin/sh\necho hello > out.txt && mkdir -p sub && echo moved > sub/a && mv sub/a b && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"\n")
	res := f.mustOK(f.call(f.runner(nil), "writer", `{}`))
	if got, _ := os.ReadFile(filepath.Join(f.work, "out.txt")); string(got) != "hello\n" {
		t.Errorf("out.txt = %q", got)
	}
	if !exists(filepath.Join(f.work, "b")) {
		t.Error("rename across directories inside the workdir failed")
	}
	if string(res.Stdout) != "tmp\n" || res.Unsandboxed {
		t.Errorf("stdout %q unsandboxed %v", res.Stdout, res.Unsandboxed)
	}
}

func TestWriteOutsideFails(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(f.outside, "escaped.txt")
	f.add("escaper", `{"description":"writes outside"}`, fmt.Sprintf("#!/bin/sh\necho x > %s\n", target))
	_, err := f.call(f.runner(nil), "escaper", `{}`)
	ce := wantKind(t, err, ErrExit)
	if exists(target) {
		t.Fatal("the tool wrote outside its working directory")
	}
	if !strings.Contains(ce.Error(), "Permission denied") {
		t.Errorf("message %q does not carry the tool's error", ce.Error())
	}
	// The same write from a shell tool spelled as "cmd" (run through sh -c).
	f.add("escaper2", fmt.Sprintf(`{"description":"writes outside","cmd":"echo x > %s"}`, target), "")
	wantKind(t, errOf(f.call(f.runner(nil), "escaper2", `{}`)), ErrExit)
	if exists(target) {
		t.Fatal("the shell tool wrote outside its working directory")
	}
}

func errOf(_ *Result, err error) error { return err }

func TestReadOnlyToolCannotWrite(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(filepath.Join(f.work, "in.txt"), []byte("input\n"), 0o644)
	f.add("reader", `{"description":"reads","readOnly":true}`,
		"#!/bin/sh\ncat in.txt\n(echo x > out.txt) 2>/dev/null && echo WROTE-WORKDIR\n(echo x > \"$TMPDIR/t\") 2>/dev/null && echo WROTE-TMP\n(mkdir d) 2>/dev/null && echo MKDIR\n(rm in.txt) 2>/dev/null && echo REMOVED\nexit 0\n")
	res := f.mustOK(f.call(f.runner(nil), "reader", `{}`))
	if string(res.Stdout) != "input\n" {
		t.Errorf("readOnly tool: stdout %q, want only the input (no write succeeded)", res.Stdout)
	}
	for _, p := range []string{"out.txt", "d"} {
		if exists(filepath.Join(f.work, p)) {
			t.Errorf("readOnly tool created %s", p)
		}
	}
	if !exists(filepath.Join(f.work, "in.txt")) {
		t.Error("readOnly tool removed in.txt")
	}
}

func TestCannotReadHomeOrSystemSecrets(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	os.MkdirAll(filepath.Dir(secret), 0o700)
	os.WriteFile(secret, []byte("SECRET-KEY"), 0o600)
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return home
		case "API_TOKEN":
			return "leaked-token"
		}
		return ""
	}
	// A symlink planted in the working directory does not help: Landlock
	// checks the file it resolves to.
	if err := os.Symlink(secret, filepath.Join(f.work, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	f.add("snoop", `{"description":"reads the home directory"}`,
		fmt.Sprintf("#!/bin/sh\necho \"home=$HOME\"\ncat %s\nls %s\ncat /etc/shadow\ncat innocent.txt\nexit 0\n", secret, home))
	res := f.mustOK(f.call(f.runner(func(o *Options) { o.Getenv = getenv }), "snoop", `{}`))
	out := string(res.Stdout)
	if strings.Contains(out, "SECRET-KEY") || strings.Contains(out, ".ssh") {
		t.Fatalf("sandboxed tool read the fake home directory: %q", out)
	}
	if strings.Contains(out, "home="+home) {
		t.Errorf("HOME leaked into the tool: %q", out)
	}
	if n := strings.Count(string(res.Stderr), "Permission denied"); n != 4 {
		t.Errorf("want 4 permission errors (secret, home listing, /etc/shadow, symlink), stderr: %s", res.Stderr)
	}
	// Control: unsandboxed, the same tool does read it (so the test can fail).
	noLL := f.runner(func(o *Options) {
		o.Getenv = getenv
		o.AllowUnsandboxed = true
		o.landlockABI = func() (int, error) { return 0, errors.New("simulated kernel without landlock") }
	})
	res = f.mustOK(f.call(noLL, "snoop", `{}`))
	if !strings.Contains(string(res.Stdout), "SECRET-KEY") || !res.Unsandboxed {
		t.Errorf("control run: stdout %q unsandboxed %v", res.Stdout, res.Unsandboxed)
	}
}

func TestNetwork(t *testing.T) {
	f := newFixture(t)
	l := newListener(t)
	addr := l.ln.Addr().String()
	f.addProbe("offline", `{"description":"no network"}`)
	f.addProbe("online", `{"description":"network","network":true}`)

	type probe struct {
		tool, args string
		ok         bool
	}
	dial := func(mptcp bool) string { return fmt.Sprintf(`{"op":"dial","addr":%q,"mptcp":%v}`, addr, mptcp) }
	listen := func(mptcp bool) string { return fmt.Sprintf(`{"op":"listen","mptcp":%v}`, mptcp) }
	denied := []probe{
		{"offline", dial(false), false}, {"offline", dial(true), false},
		{"offline", listen(false), false}, {"offline", listen(true), false},
	}
	for _, mode := range []struct {
		name  string
		netns bool
	}{{"namespaces", true}, {"no namespaces", false}} {
		t.Run(mode.name, func(t *testing.T) {
			r := f.runner(func(o *Options) {
				if !mode.netns {
					o.Isolation = IsolationNone
				}
			})
			probes := denied
			if !mode.netns {
				// Without the namespace, Landlock and the seccomp filter
				// alone must hold: the raw MPTCP socket is refused.
				probes = append(append([]probe(nil), denied...), probe{"offline", `{"op":"socket-mptcp"}`, false})
			}
			for _, p := range probes {
				res, err := f.call(r, p.tool, p.args)
				if err == nil {
					t.Errorf("%s %s: succeeded (%q), want denied", p.tool, p.args, res.Stdout)
				} else if !errors.Is(err, ErrExit) {
					t.Errorf("%s %s: %v, want the tool to fail", p.tool, p.args, err)
				}
			}
			if n := l.count(0, 50*time.Millisecond); n != 0 {
				t.Errorf("listener got %d connections from tools without network", n)
			}
			for _, args := range []string{dial(false), dial(true), listen(false), listen(true)} {
				if _, err := f.call(r, "online", args); err != nil {
					t.Errorf("network tool %s: %v", args, err)
				}
			}
			if n := l.count(2, safetyNet); n != 2 {
				t.Errorf("listener got %d connections from the network tool, want 2", n)
			}
		})
	}
}

func TestToolExecutableOutsideSandboxFails(t *testing.T) {
	f := newFixture(t)
	// An interpreter outside the allowed directories cannot be executed.
	interp := filepath.Join(f.outside, "mysh")
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(interp, data, 0o755)
	marker := filepath.Join(f.work, "ran")
	f.add("weird", `{"description":"odd interpreter"}`, fmt.Sprintf("#!%s\ntouch %s\n", interp, marker))
	_, err = f.call(f.runner(nil), "weird", `{}`)
	ce := wantKind(t, err, ErrSandbox)
	if exists(marker) || !strings.Contains(ce.Error(), "cannot execute") {
		t.Errorf("marker %v, error %v", exists(marker), ce)
	}
}

func TestSandboxFailureNeverRunsUnconfined(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.work, "ran")
	f.add("toucher", `{"description":"touches"}`, fmt.Sprintf("#!/bin/sh\ntouch %s\n", marker))
	tool := f.tool("toucher")
	for name, pol := range map[string]string{
		"bad policy JSON":        `{"workdir":`,
		"missing workdir":        `{"workdir":"/nonexistent/toolsrv-test"}`,
		"relative workdir":       `{"workdir":"rel"}`,
		"workdir is a file":      fmt.Sprintf(`{"workdir":%q}`, f.selfExe),
		"readable path is weird": fmt.Sprintf(`{"workdir":%q,"tempdir":"/nonexistent/tmp"}`, f.work),
	} {
		t.Run(name, func(t *testing.T) {
			cmd := osexec.Command(f.selfExe, append([]string{HelperArg, pol, "--"}, tool.Command.Argv...)...)
			cmd.Dir = f.work
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *osexec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitSandbox {
				t.Fatalf("helper: %v, want exit %d", err, ExitSandbox)
			}
			if !strings.Contains(stderr.String(), "toolsrv sandbox:") {
				t.Errorf("stderr %q", stderr.String())
			}
			if exists(marker) {
				t.Fatal("the tool ran although the sandbox could not be applied")
			}
		})
	}
}

func TestNoLandlockRefusesUnlessAllowed(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.work, "ran")
	f.add("toucher", `{"description":"touches"}`, fmt.Sprintf("#!/bin/sh\ntouch %s\necho done\n", marker))
	noLandlock := func(o *Options) {
		o.landlockABI = func() (int, error) { return 0, errors.New("simulated: landlock is not available") }
	}
	r := f.runner(noLandlock)
	if ok, _ := r.Sandboxed(); ok {
		t.Fatal("Sandboxed() = true on a simulated kernel without Landlock")
	}
	_, err := f.call(r, "toucher", `{}`)
	ce := wantKind(t, err, ErrNoSandbox)
	if exists(marker) || !strings.Contains(ce.Error(), "--allow-unsandboxed") {
		t.Fatalf("marker %v, error %v", exists(marker), ce)
	}
	r = f.runner(func(o *Options) { noLandlock(o); o.AllowUnsandboxed = true })
	res := f.mustOK(f.call(r, "toucher", `{}`))
	if !res.Unsandboxed || !exists(marker) {
		t.Fatalf("allowed unsandboxed run: unsandboxed=%v ran=%v", res.Unsandboxed, exists(marker))
	}
}

func TestCapabilitiesDropped(t *testing.T) {
	f := newFixture(t)
	f.add("caps", `{"description":"shows its capabilities"}`, "#!/bin/sh\ngrep -E '^(CapEff|CapBnd|CapPrm|CapAmb|NoNewPrivs)' /proc/self/status\n")
	res := f.mustOK(f.call(f.runner(nil), "caps", `{}`))
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(l, ":")
		got[k] = strings.TrimSpace(v)
	}
	// As root only the file-ownership capabilities survive (CHOWN,
	// DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER: 0xf; not FSETID); as anyone
	// else none at all.
	want := "0000000000000000"
	if os.Geteuid() == 0 {
		want = "000000000000000f"
	}
	for _, k := range []string{"CapEff", "CapPrm"} {
		if got[k] != want {
			t.Errorf("%s = %s, want %s", k, got[k], want)
		}
	}
	if os.Geteuid() == 0 && got["CapBnd"] != want {
		t.Errorf("CapBnd = %s, want %s", got["CapBnd"], want)
	}
	if got["CapAmb"] != "0000000000000000" || got["NoNewPrivs"] != "1" {
		t.Errorf("ambient %s, no_new_privs %s", got["CapAmb"], got["NoNewPrivs"])
	}
}

// The toolsrv binary named by Options.ClientBin (tool_load runs it as a 9P
// client) may be executed inside the sandbox and is passed as TOOLSRV_BIN;
// other binaries outside the system directories still may not.
func TestClientBinExecutable(t *testing.T) {
	f := newFixture(t)
	client := filepath.Join(f.outside, "toolsrv-client")
	data, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(client, data, 0o755)
	f.add("runclient", `{"description":"runs the client"}`, "#!/bin/sh\n\"$TOOLSRV_BIN\" client-ran\n")
	res := f.mustOK(f.call(f.runner(func(o *Options) { o.ClientBin = client }), "runclient", `{}`))
	if got := strings.TrimSpace(string(res.Stdout)); got != "client-ran" {
		t.Errorf("stdout = %q, want client-ran", got)
	}
	_, err = f.call(f.runner(nil), "runclient", `{}`)
	if err == nil {
		t.Error("without ClientBin the tool ran a binary outside the sandbox's executable paths")
	}
}
