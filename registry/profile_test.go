package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "coder.json"), []byte(`{"autoLoad":["file_read","shell"],"allowTools":["file_read","shell","git_diff"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "open.json"), []byte(`{"autoLoad":["file_read"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "locked.json"), []byte(`{"allowTools":[]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"autoLoad":"file_read"}`), 0o644)
	tests := []struct {
		agent    string
		autoLoad string
		allowed  []string
		denied   []string
		err      string
	}{
		{"coder", "file_read,shell", []string{"file_read", "git_diff"}, []string{"http_fetch"}, ""},
		{"open", "file_read", []string{"anything"}, nil, ""},
		{"locked", "", nil, []string{"file_read"}, ""},
		{"nobody", "", []string{"anything"}, nil, ""},
		{"bad", "", nil, nil, "must be a JSON object"},
		{"../etc", "", nil, nil, "agent name"},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			p, err := LoadProfile(dir, tc.agent)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.AutoLoad, ","); got != tc.autoLoad {
				t.Errorf("autoLoad = %q, want %q", got, tc.autoLoad)
			}
			for _, n := range tc.allowed {
				if !p.Allows(n) {
					t.Errorf("%s should be allowed", n)
				}
			}
			for _, n := range tc.denied {
				if p.Allows(n) {
					t.Errorf("%s should be denied", n)
				}
			}
		})
	}
}
