package exec

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// A helper whose policy says it has a mount namespace of its own
// (Policy.MountNS) when it was started without one mounts nothing: as
// root it would otherwise mount over the host's files.
func TestHelperMountsOnlyInItsOwnNamespace(t *testing.T) {
	f := newFixture(t)
	f.add("report", `{"description":"reports"}`, "#!/bin/sh\necho ok\n")
	r := f.runner(nil)
	tmp := t.TempDir()
	pol := r.callPolicy(f.tool("report"), f.work, tmp, nil, true, r.limitsFor(f.tool("report")))
	pol.MountNS, pol.PidNS, pol.TempSize = true, false, 1<<20
	pj, err := json.Marshal(pol)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sandbox.StartHelper(f.selfExe, append([]string{HelperArg, string(pj), "--"}, "/bin/true"), nil, f.work, sandbox.Namespaces{})
	if err != nil {
		t.Fatal(err)
	}
	h.Stdin.Close()
	io.Copy(io.Discard, h.Stdout)
	io.Copy(io.Discard, h.Stderr)
	sandbox.ReadStatus(h.Status)
	h.Discard()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(info), " "+tmp+" ") {
		t.Errorf("the helper mounted on %s in the host's mount namespace:\n%s", tmp, info)
	}
}
