package exec

import (
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

func TestDenialHint(t *testing.T) {
	pol := sandbox.Policy{WorkDir: "/home/u/project", TempDir: "/tmp/toolsrv-call-1-2", Read: []string{"/home/u"}}
	ro := pol
	ro.ReadOnly = true
	for _, c := range []struct {
		name   string
		pol    sandbox.Policy
		stderr string
		want   string // "" for no hint
	}{
		{"cat outside", pol, "cat: /root/secret: Permission denied\n", "/root/secret is outside what this tool may read"},
		{"quoted", pol, "grep: '/srv/data/x.csv': Permission denied", "/srv/data/x.csv is outside what this tool may read"},
		{"go style", pol, "open /etc/shadow: permission denied", "--read /etc/shadow"},
		{"write outside", pol, "touch: cannot touch '/home/u/other/f': Permission denied", "/home/u/other/f is outside what this tool may write"},
		// Writes outside everything it may reach: what allows writing, not
		// --read (which would not let it write).
		{"sh redirect outside", pol, "/bin/sh: 1: cannot create /etc/escaped: Permission denied\n", "/etc/escaped is outside what this tool may write"},
		{"touch outside", pol, "touch: cannot touch '/etc/escaped': Permission denied\n", "/etc/escaped is outside what this tool may write"},
		{"mkdir outside", pol, "mkdir: cannot create directory ‘/etc/d’: Permission denied\n", "/etc/d is outside what this tool may write"},
		{"cp outside", pol, "cp: cannot create regular file '/etc/e2': Permission denied\n", "/etc/e2 is outside what this tool may write"},
		{"chmod outside", pol, "chmod: changing permissions of '/etc/hostname': Operation not permitted\n", "/etc/hostname is outside what this tool may write"},
		{"a read on the next line", pol, "touch: cannot touch 'x': Permission denied\ncat: /root/secret: Permission denied\n", "/root/secret is outside what this tool may read"},
		{"readOnly write", ro, "sh: 1: cannot create /home/u/project/out: Permission denied", "the tool is readOnly"},
		{"inside: the file's own permissions", pol, "cat: /home/u/project/locked: Permission denied", ""},
		{"no path", pol, "fatal: something else went wrong", ""},
		{"relative path", pol, "chmod: changing permissions of './x': Operation not permitted", ""},
		{"unconfined", sandbox.Policy{Unconfined: true, WorkDir: "/w"}, "cat: /root/x: Permission denied", ""},
	} {
		got := denialHint([]byte(c.stderr), c.pol)
		if c.want == "" {
			if got != "" {
				t.Errorf("%s: hint %q, want none", c.name, got)
			}
			continue
		}
		if !strings.HasPrefix(got, "denied by the sandbox: ") || !strings.Contains(got, c.want) {
			t.Errorf("%s: hint %q, want it to contain %q", c.name, got, c.want)
		}
		if strings.Contains(c.want, "may write") && strings.Contains(got, "--read") {
			t.Errorf("%s: hint %q suggests --read for a write", c.name, got)
		}
	}
}
