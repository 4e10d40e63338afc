package sandbox

import (
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// The test binary is the helper of the tests below, the thread probe of
// TestHoldThreads and the probe of TestOlderLandlockABIs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == abiProbeArg {
		abiProbe(os.Args[2:])
		os.Exit(0)
	}
	if len(os.Args) > 3 && os.Args[1] == threadProbeArg {
		hold, _ := strconv.Atoi(os.Args[2])
		need, _ := strconv.Atoi(os.Args[3])
		threadProbe(hold, need)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A prestarted helper whose order pipe closes without an Order (its
// caller had no call for it, or died) exits with status 0, having run
// nothing, reported nothing and said nothing.
func TestPrestartedHelperWithoutOrder(t *testing.T) {
	h := prestartSelf(t)
	h.order.Close()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(h.Pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("wait status %v, want exit 0", ws)
	}
	for name, f := range map[string]*os.File{"status": h.Status, "stdout": h.Stdout, "stderr": h.Stderr} {
		if b, err := io.ReadAll(f); err != nil || len(b) > 0 {
			t.Errorf("%s: %q, %v; want nothing", name, b, err)
		}
		f.Close()
	}
}

// An Order that is not JSON is refused on the status pipe, and nothing
// runs.
func TestPrestartedHelperBadOrder(t *testing.T) {
	h := prestartSelf(t)
	h.order.Write([]byte(`{"policy": not json`))
	h.order.Close()
	st, ok, err := ReadStatus(h.Status)
	if err != nil || !ok || st.Exit != ExitSandbox || st.Error == "" {
		t.Errorf("status %+v (ok %v, %v), want a refusal with exit %d", st, ok, err, ExitSandbox)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(h.Pid, &ws, 0, nil)
	if ws.ExitStatus() != ExitSandbox {
		t.Errorf("wait status %v, want exit %d", ws, ExitSandbox)
	}
	for _, f := range []*os.File{h.Status, h.Stdout, h.Stderr} {
		f.Close()
	}
}

// prestartSelf prestarts this test binary as a helper without
// namespaces; its standard input is closed, its pidfd closed at the end.
func prestartSelf(t *testing.T) *Helper {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Prestart(self, Namespaces{})
	if err != nil {
		t.Fatal(err)
	}
	h.Stdin.Close()
	t.Cleanup(func() {
		if h.PidFD >= 0 {
			syscall.Close(h.PidFD)
		}
	})
	return h
}
