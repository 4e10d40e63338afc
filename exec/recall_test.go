package exec

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// A call on a recalled helper (Options.Recalled: prepared, while toolsrv
// call starts, from the recipe an earlier call of the tool remembered) is
// the call a fresh helper runs, in the recalled helper's temporary
// directory. A recipe that is not the call's own in every field (another
// command, a wider policy, another working directory), or whose helper no
// longer fits (a path of its policy replaced, its temporary directory
// touched), is not used: the call starts its own and the recalled helper
// and its directory are gone.
func TestRecalledHelper(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(f *fixture, rc *sandbox.Recipe)
		before func(t *testing.T, f *fixture, r *sandbox.Recalled)
		used   bool
	}{
		{"the same call", nil, nil, true},
		{"another command", func(f *fixture, rc *sandbox.Recipe) { rc.Argv = []string{"/bin/sh", "-c", "echo other"} }, nil, false},
		{"a wider policy", func(f *fixture, rc *sandbox.Recipe) { rc.Policy.Network = true }, nil, false},
		{"more to write", func(f *fixture, rc *sandbox.Recipe) { rc.Policy.Write = append(rc.Policy.Write, f.outside) }, nil, false},
		{"another working directory", func(f *fixture, rc *sandbox.Recipe) { rc.Dir, rc.Policy.WorkDir = f.outside, f.outside }, nil, false},
		{"a replaced working directory", nil, func(t *testing.T, f *fixture, r *sandbox.Recalled) {
			if err := os.Rename(f.work, f.work+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(f.work, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a touched temporary directory", nil, func(t *testing.T, f *fixture, r *sandbox.Recalled) {
			if err := os.WriteFile(filepath.Join(r.Tmp, "planted"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	callTemp := regexp.MustCompile(`toolsrv-call-[0-9]+-[0-9]+`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.add("report", `{"description":"reports where and how it runs"}`, "#!/bin/sh\npwd\nenv | grep -v '^_=' | sort\necho x > out.txt && echo wrote inside\n")
			var rcs []sandbox.Recipe
			r0 := f.runner(func(o *Options) { o.Remember = func(rc sandbox.Recipe) { rcs = append(rcs, rc) } })
			want := f.mustOK(f.call(r0, "report", `{}`))
			if len(rcs) != 1 || rcs[0].Tool != "report" {
				t.Fatalf("remembered %+v, want the one call's recipe", rcs)
			}
			rc := rcs[0]
			if c.edit != nil {
				c.edit(f, &rc)
			}
			rec, err := sandbox.Recall(f.selfExe, os.TempDir(), rc)
			if err != nil {
				t.Fatalf("recall: %v", err)
			}
			defer rec.Discard()
			if c.before != nil {
				c.before(t, f, rec)
			}
			var log strings.Builder
			r := f.runner(func(o *Options) {
				o.Recalled = rec
				o.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			got := f.mustOK(f.call(r, "report", `{}`))
			used := strings.Contains(log.String(), "prepared=true")
			if used != c.used {
				t.Errorf("the call ran on the recalled helper: %v, want %v\n%s", used, c.used, log.String())
			}
			if inTmp := strings.Contains(string(got.Stdout), "TMPDIR="+rec.Tmp+"\n"); inTmp != c.used {
				t.Errorf("the call's TMPDIR is the recalled helper's (%s): %v, want %v:\n%s", rec.Tmp, inTmp, c.used, got.Stdout)
			}
			norm := func(b []byte) string { return callTemp.ReplaceAllString(string(b), "toolsrv-call-<own>") }
			if norm(got.Stdout) != norm(want.Stdout) {
				t.Errorf("the call printed\n%s\nwant (a fresh helper)\n%s", got.Stdout, want.Stdout)
			}
			if _, err := os.Stat(rec.Tmp); !os.IsNotExist(err) {
				t.Errorf("the recalled helper's temporary directory is still there after the call: %v", err)
			}
		})
	}
}

// A recipe is read from a file: one whose namespaces and policy disagree
// (a policy that claims a mount namespace the helper would not have) is
// refused before any helper starts, and a helper told so by its policy
// anyway mounts nothing unless it is in a mount namespace of its own
// (as root it would otherwise mount over the host's files).
func TestRecallRefusesInconsistentRecipes(t *testing.T) {
	f := newFixture(t)
	f.add("report", `{"description":"reports"}`, "#!/bin/sh\necho ok\n")
	var rcs []sandbox.Recipe
	r0 := f.runner(func(o *Options) { o.Remember = func(rc sandbox.Recipe) { rcs = append(rcs, rc) } })
	f.mustOK(f.call(r0, "report", `{}`))
	good := rcs[0]
	for _, c := range []struct {
		name string
		edit func(rc *sandbox.Recipe)
	}{
		{"no namespaces, a mount namespace claimed", func(rc *sandbox.Recipe) { rc.NS = sandbox.Namespaces{} }},
		{"no PID namespace, one claimed", func(rc *sandbox.Recipe) { rc.NS.PID, rc.NS.Mount = false, true }},
		{"a mount namespace without the policy's", func(rc *sandbox.Recipe) { rc.Policy.MountNS = false }},
		{"another user's ids", func(rc *sandbox.Recipe) { rc.NS.User, rc.NS.UID, rc.Policy.UserNS = true, os.Getuid()+1, true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := good
			c.edit(&rc)
			if rec, err := sandbox.Recall(f.selfExe, os.TempDir(), rc); err == nil {
				rec.Discard()
				t.Fatalf("recalled %+v", rc)
			}
		})
	}
	t.Run("a helper without a mount namespace told it has one", func(t *testing.T) {
		tmp := t.TempDir()
		pol := good.Policy
		pol.TempDir, pol.TempSize, pol.PidNS = tmp, 1<<20, false
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
	})
}
