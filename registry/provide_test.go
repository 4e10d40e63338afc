package registry

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func catalogNames(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Name)
	}
	return out
}

// A provider's tools join the directories' tools as PROVIDER:NAME, are
// validated like .meta tools, can be made unavailable and come back, and
// are withdrawn; every step is a change subscribers see.
func TestProvide(t *testing.T) {
	dir := t.TempDir()
	// A .meta tool whose name looks like a provided one minus the colon:
	// it cannot collide.
	if err := os.WriteFile(filepath.Join(dir, "fs.read.meta"), []byte(`{"description":"local read","cmd":"true"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	r := New(Options{Dirs: []string{dir}})
	changes := r.Subscribe(ctx)
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	<-changes
	next := func() Change {
		t.Helper()
		select {
		case ch := <-changes:
			return ch
		case <-ctx.Done():
			t.Fatal("no change published")
		}
		return Change{}
	}

	good := []Provided{
		{Name: "read", Description: "Read a file", Args: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "list", Description: "List a directory", ReadOnly: true},
		{Name: "nodesc"},
	}
	bad := []Provided{
		{Name: "bad schema", Description: "x"},
		{Name: "loose", Description: "x", Args: json.RawMessage(`{"type":17}`)},
		{Name: "deep", Description: "x", Args: json.RawMessage(strings.Repeat(`{"not":`, MaxSchemaDepth+1) + `{}` + strings.Repeat(`}`, MaxSchemaDepth+1))},
		{Name: "read", Description: "a second read"},
		{Name: "odd", Description: "x", Tier: "lukewarm"},
	}
	if err := r.Provide(ctx, "fs", Provision{Source: "mcp server fs", Tools: append(slices.Clone(good), bad...)}); err != nil {
		t.Fatal(err)
	}
	ch := next()
	slices.Sort(ch.Upserted)
	if want := []string{"fs:list", "fs:nodesc", "fs:read"}; !slices.Equal(ch.Upserted, want) {
		t.Errorf("upserted %v, want %v", ch.Upserted, want)
	}
	cat := r.Catalog()
	if want := []string{"fs.read", "fs:list", "fs:nodesc", "fs:read"}; !slices.Equal(catalogNames(cat), want) {
		t.Errorf("catalog %v, want %v", catalogNames(cat), want)
	}
	read, err := cat.Lookup("fs:read")
	if err != nil {
		t.Fatal(err)
	}
	if read.Provider != "fs" || read.Command.Kind != ByProvider || read.File != "mcp server fs" || read.Tier != Warm || read.Concurrency != Parallel {
		t.Errorf("fs:read = %+v", read)
	}
	if err := read.ValidateArgs([]byte(`{}`)); err == nil {
		t.Error("the provided schema is not applied: {} accepted without the required path")
	}
	if err := read.ValidateArgs([]byte(`{"path":"/x"}`)); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
	if nd, _ := cat.Get("fs:nodesc"); nd == nil || nd.Description != "nodesc" || len(nd.Warnings) == 0 {
		t.Errorf("a tool without a description is ranked by its name, with a warning: %+v", nd)
	}
	var probs []string
	for _, p := range cat.Problems {
		probs = append(probs, p.Name+" "+p.Field)
	}
	slices.Sort(probs)
	if want := []string{`fs:"bad schema" name`, "fs:deep args", "fs:loose args", "fs:odd ", "fs:read name"}; !slices.Equal(probs, want) {
		t.Errorf("problems %q, want %q", probs, want)
	}
	if _, err := cat.Lookup("fs:write"); err == nil || !strings.Contains(err.Error(), "no provider fs offers it") {
		t.Errorf("lookup of a tool the provider lacks: %v", err)
	}

	// The same provision again changes nothing a subscriber acts on.
	hash := read.Hash
	if err := r.Provide(ctx, "fs", Provision{Source: "mcp server fs", Tools: good}); err != nil {
		t.Fatal(err)
	}
	if ch := next(); len(ch.Upserted)+len(ch.Removed) != 0 {
		t.Errorf("an unchanged provision upserted %v and removed %v", ch.Upserted, ch.Removed)
	}
	if got, _ := r.Catalog().Get("fs:read"); got.Hash != hash {
		t.Error("the hash of an unchanged provided tool changed")
	}

	// Unavailable: the last tools are hidden with the reason, not callable.
	if err := r.Provide(ctx, "fs", Provision{Source: "mcp server fs", Unavailable: "the server exited; restarting in 2s"}); err != nil {
		t.Fatal(err)
	}
	ch = next()
	slices.Sort(ch.Removed)
	if want := []string{"fs:list", "fs:nodesc", "fs:read"}; !slices.Equal(ch.Removed, want) {
		t.Errorf("removed %v, want %v", ch.Removed, want)
	}
	if _, err := r.Catalog().Lookup("fs:read"); err == nil || !strings.Contains(err.Error(), "restarting in 2s") {
		t.Errorf("an unavailable tool's lookup says why: %v", err)
	}
	if err := r.Provide(ctx, "fs", Provision{Source: "mcp server fs", Tools: good}); err != nil {
		t.Fatal(err)
	}
	if ch := next(); len(ch.Upserted) != 3 {
		t.Errorf("back: upserted %v", ch.Upserted)
	}

	r.Withdraw("fs")
	ch = next()
	if len(ch.Removed) != 3 {
		t.Errorf("withdrawn: removed %v", ch.Removed)
	}
	if want := []string{"fs.read"}; !slices.Equal(catalogNames(r.Catalog()), want) {
		t.Errorf("after Withdraw: %v", catalogNames(r.Catalog()))
	}

	for _, name := range []string{"", "a:b", "a/b", "-x"} {
		if err := r.Provide(ctx, name, Provision{}); err == nil {
			t.Errorf("provider name %q accepted", name)
		}
	}
	// A reload of the directories keeps the provided tools.
	if err := r.Provide(ctx, "mem", Provision{Tools: good[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.meta"), []byte(`{"description":"other","cmd":"true"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fs.read", "mem:read", "other"}; !slices.Equal(catalogNames(r.Catalog()), want) {
		t.Errorf("after a reload: %v, want %v", catalogNames(r.Catalog()), want)
	}
}

// A provider holds some of its tools back: they are listed as hidden with
// the provider's reason, neither in the catalog's tools nor callable
// (Lookup says why), through an Unavailable provision too, and back when
// a provision offers them.
func TestProvideHeld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	r := New(Options{Dirs: []string{t.TempDir()}})
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const why = "held: its definition changed since its owner approved it"
	say := Provided{Name: "say", Description: "say a text back"}
	poll := Provided{Name: "poll", Description: "ask a question"}
	check := func(step string, wantTools []string, wantHeld bool) {
		t.Helper()
		cat := r.Catalog()
		if got := catalogNames(cat); !slices.Equal(got, wantTools) {
			t.Errorf("%s: tools %v, want %v", step, got, wantTools)
		}
		_, err := cat.Lookup("s:poll")
		reason, hidden := cat.HiddenReason("s:poll")
		if held := hidden && reason == why; held != wantHeld {
			t.Errorf("%s: s:poll held %v (hidden %v, %q), want %v", step, held, hidden, reason, wantHeld)
		}
		if wantHeld && (err == nil || !strings.Contains(err.Error(), "not available: "+why)) {
			t.Errorf("%s: Lookup of the held tool: %v", step, err)
		}
	}
	if err := r.Provide(ctx, "s", Provision{Source: "server s", Tools: []Provided{say}, Held: []Hidden{{Name: "poll", Reason: why}}}); err != nil {
		t.Fatal(err)
	}
	check("held", []string{"s:say"}, true)
	if err := r.Provide(ctx, "s", Provision{Source: "server s", Unavailable: "it died"}); err != nil {
		t.Fatal(err)
	}
	check("unavailable", nil, true)
	if err := r.Provide(ctx, "s", Provision{Source: "server s", Tools: []Provided{say, poll}}); err != nil {
		t.Fatal(err)
	}
	check("approved", []string{"s:poll", "s:say"}, false)
}

// A name from elsewhere is shown quoted and bounded when it is not a tool
// name: a line feed or an escape sequence in it cannot start a line or
// rewrite the terminal, and 100 KB of it cannot fill the screen.
func TestShownName(t *testing.T) {
	for in, want := range map[string]string{
		"read_file":                             "read_file",
		"a\n\n0 errors: all verified\x1b]0;X\a": `"a\n\n0 errors: all verified\x1b]0;X\a"`,
		"x:y":                                   `"x:y"`,
		"rtl\u202etxt":                          `"rtl\u202etxt"`,
		strings.Repeat("é", 100):                `"` + strings.Repeat("é", 80) + `"… (200 bytes)`,
	} {
		if got := ShownName(in); got != want {
			t.Errorf("ShownName(%q) = %s, want %s", in, got, want)
		}
	}
	if err := ValidProvidedName(strings.Repeat("n", 100_000)); err == nil || len(err.Error()) > 400 {
		t.Errorf("the error of a 100 KB name is %d bytes", len(err.Error()))
	}
}
