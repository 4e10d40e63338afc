package thresholds

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/embed/embedder"
)

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", Key("ollama/nomic-embed-text")+".json")
	in := &File{
		Embedder: "ollama/nomic-embed-text",
		Policy: Policy{Levels: Levels{Min: 0.31, ColdMin: 0.42, Relative: 0.65, MaxTools: 4},
			Degraded: &Levels{Min: 0.5, ColdMin: 0.6, Relative: 0.8, MaxTools: 2}},
		Tuning: &Tuning{Date: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), Objective: "max recall",
			Corpora: []string{"a", "b"}, HeldOut: map[string]Figures{"a": {Queries: 10, Recall: 0.5}}},
	}
	if err := WriteFile(path, in); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, want mode %v", p, fi.Mode().Perm(), want)
		}
	}
	out, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Format != Format || out.Version != Version {
		t.Fatalf("header %q v%d, want %q v%d", out.Format, out.Version, Format, Version)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the file:\n in %+v\nout %+v", in, out)
	}
	pol, src, err := Load("ollama/nomic-embed-text", LoadOptions{Dir: filepath.Dir(path), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != FromUser || src.Path != path || !reflect.DeepEqual(pol, in.Policy) {
		t.Fatalf("Load = %+v from %v, want the user file %s", pol, src, path)
	}
}

// What `tune --show --json` adds (source, path, warning) is read as
// nothing and never written: a file carries no stale provenance.
func TestShownFieldsAreIgnored(t *testing.T) {
	shown := `{"format":"toolsrv-thresholds","version":2,"embedder":"e","policy":{"min":0.3,"coldMin":0.4,"relative":0.5,"maxTools":3},` +
		`"source":"env","path":"/somewhere/else.json","warning":"tuned for another model"}`
	f, err := Parse([]byte(shown))
	if err != nil {
		t.Fatalf("the output of tune --show --json: %v", err)
	}
	if f.Source != "" || f.Path != "" || f.Warning != "" {
		t.Errorf("Parse kept what --show added: %+v", f)
	}
	f.Source, f.Path, f.Warning = FromFlag, "/x.json", "w"
	path := filepath.Join(t.TempDir(), "t.json")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"source"`, `"path"`, `"warning"`} {
		if strings.Contains(string(data), key) {
			t.Errorf("WriteFile wrote %s:\n%s", key, data)
		}
	}
	if f.Source != FromFlag {
		t.Error("WriteFile changed the File it was given")
	}
}

// A file of an earlier release that sets the obsolete "noise" level loads
// (the level is ignored and not written again); any other unknown field,
// in the degraded levels too, is still refused.
func TestObsoleteNoiseLevel(t *testing.T) {
	old := `{"format":"toolsrv-thresholds","version":2,"embedder":"e","policy":{"min":0.3,"coldMin":0.4,"maxTools":3,"noise":0.3,` +
		`"degraded":{"min":0.5,"coldMin":0.5,"maxTools":2,"noise":0.1}}}`
	f, err := Parse([]byte(old))
	if err != nil {
		t.Fatalf("a file with the obsolete noise level: %v", err)
	}
	if f.Policy.Min != 0.3 || f.Policy.MaxTools != 3 || f.Policy.Degraded == nil || f.Policy.Degraded.Min != 0.5 {
		t.Errorf("read %+v", f.Policy)
	}
	path := filepath.Join(t.TempDir(), "t.json")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || strings.Contains(string(data), "noise") {
		t.Errorf("written again: %s (%v)", data, err)
	}
	for _, bad := range []string{strings.Replace(old, `"noise":0.3`, `"nois":0.3`, 1), strings.Replace(old, `"noise":0.1`, `"nose":0.1`, 1)} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: error %v, want an unknown field", bad, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	good := `{"format":"toolsrv-thresholds","version":1,"embedder":"e","policy":{"min":0.3,"coldMin":0.4,"relative":0.5,"maxTools":3}}`
	tests := []struct {
		name, data, want string
	}{
		{"newer version", strings.Replace(good, `"version":1`, `"version":3`, 1), "newer than this toolsrv"},
		{"version zero", strings.Replace(good, `"version":1`, `"version":0`, 1), "at least 1"},
		{"other format", strings.Replace(good, `toolsrv-thresholds`, `x`, 1), "not a toolsrv thresholds file"},
		{"unknown field", strings.Replace(good, `"min":0.3`, `"minimum":0.3`, 1), "unknown field"},
		{"invalid policy", strings.Replace(good, `"coldMin":0.4`, `"coldMin":0.1`, 1), "coldMin"},
		{"no embedder", strings.Replace(good, `"embedder":"e"`, `"embedder":""`, 1), "embedder is empty"},
		{"not json", `{"format":`, "decoding"},
	}
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("the good file fails: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, emb string, min float64) string {
		p := filepath.Join(dir, name)
		if err := WriteFile(p, &File{Embedder: emb, Policy: Policy{Levels: Levels{Min: min, ColdMin: min, Relative: 0.5, MaxTools: 3}}}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	user := filepath.Join(dir, "user")
	write(filepath.Join("user", Key("emb/x")+".json"), "emb/x", 0.1)
	flagged := write("flag.json", "emb/x", 0.2)
	envd := write("env.json", "emb/x", 0.3)
	other := write("other.json", "emb/y", 0.4)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvPath {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		id      string
		o       LoadOptions
		kind    SourceKind
		min     float64
		errLike string
	}{
		{"flag beats env", "emb/x", LoadOptions{Path: flagged, Getenv: env(envd), Dir: user}, FromFlag, 0.2, ""},
		{"env beats user", "emb/x", LoadOptions{Getenv: env(envd), Dir: user}, FromEnv, 0.3, ""},
		{"user file", "emb/x", LoadOptions{Getenv: env(""), Dir: user}, FromUser, 0.1, ""},
		{"fallback when nothing", "emb/none", LoadOptions{Getenv: env(""), Dir: user}, FromFallback, Fallback().Min, ""},
		{"other embedder refused", "emb/x", LoadOptions{Path: other, Getenv: env("")}, "", 0, "tuned for embedder"},
		{"other embedder when asked", "emb/x", LoadOptions{Path: other, Getenv: env(""), AnyEmbedder: true}, FromFlag, 0.4, ""},
		{"missing explicit file is an error", "emb/x", LoadOptions{Path: filepath.Join(dir, "nope.json"), Getenv: env("")}, "", 0, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol, src, err := Load(tc.id, tc.o)
			if tc.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errLike) {
					t.Fatalf("error %v, want %q", err, tc.errLike)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != tc.kind || pol.Min != tc.min {
				t.Fatalf("got %v min %v, want %v min %v", src, pol.Min, tc.kind, tc.min)
			}
		})
	}
	// A corrupt user file is an error, not silently the defaults.
	if err := os.WriteFile(filepath.Join(user, Key("emb/x")+".json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load("emb/x", LoadOptions{Getenv: env(""), Dir: user}); err == nil {
		t.Fatal("a corrupt user thresholds file loaded without error")
	}
}

func TestShippedDefaultsAreValid(t *testing.T) {
	entries, err := shipped.ReadDir("defaults")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no shipped defaults: %v", err)
	}
	for _, e := range entries {
		data, err := shipped.ReadFile("defaults/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if want := Key(f.Embedder) + ".json"; e.Name() != want {
			t.Errorf("%s holds thresholds for %q; it should be named %s", e.Name(), f.Embedder, want)
		}
		got, exact, ok := Shipped(f.Embedder)
		if !ok || !exact || !reflect.DeepEqual(got.Policy, f.Policy) {
			t.Errorf("Shipped(%q) = %v, %v, %v", f.Embedder, got, exact, ok)
		}
		// Another model of the same family gets them too, with a warning.
		other := embedder.Family(f.Embedder) + "-0123456789"
		if other != f.Embedder {
			_, src, err := Load(other, LoadOptions{Getenv: func(string) string { return "" }, Dir: t.TempDir()})
			if err != nil || src.Kind != FromShipped || !strings.Contains(src.Warning, "toolsrv tune") {
				t.Errorf("Load(%q) = %v (%v), want the shipped family defaults with a warning", other, src, err)
			}
		}
		_, src, err := Load(f.Embedder, LoadOptions{Getenv: func(string) string { return "" }, Dir: t.TempDir()})
		if err != nil || src.Kind != FromShipped {
			t.Errorf("Load(%q) with no user file came from %v (%v), want the shipped defaults", f.Embedder, src, err)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"builtin/v1": "builtin_v1", "ollama/nomic-embed-text:latest": "ollama_nomic-embed-text_latest", "": "_", "../x": ".._x"} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLexicalWeightWarning(t *testing.T) {
	tuned := Source{File: &File{Tuning: &Tuning{LexicalWeight: 0.5}}}
	for _, tc := range []struct {
		src  Source
		w    float64
		warn bool
	}{
		{tuned, 0.5, false},
		{tuned, 0.3, true},
		{Source{File: &File{}}, 0.3, false},
		{Source{}, 0.3, false},
	} {
		if got := tc.src.LexicalWeightWarning(tc.w); (got != "") != tc.warn {
			t.Errorf("LexicalWeightWarning(%v) on %+v = %q, want a warning: %v", tc.w, tc.src.File, got, tc.warn)
		}
	}
}
