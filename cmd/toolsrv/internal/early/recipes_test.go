package early

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

func recipe(tool string) sandbox.Recipe {
	return sandbox.Recipe{Tool: tool, Argv: []string{"/bin/" + tool}, Dir: "/w", Policy: sandbox.Policy{WorkDir: "/w"}}
}

// A working directory's recipes: the latest of each tool first, at most
// recipesPerDir, picked by a tool named among the arguments, written only
// when they change, and passed over when the file is not private.
func TestRecipeBook(t *testing.T) {
	state := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}
	b := openBook(getenv, "/w")
	if _, ok := b.pick([]string{"cat"}); ok {
		t.Fatal("a new book picked a recipe")
	}
	b.remember(recipe("cat"))
	b.remember(recipe("ls"))
	fi, err := os.Stat(b.path)
	if err != nil {
		t.Fatalf("no recipes written: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("recipes file mode %v, want 0600", fi.Mode().Perm())
	}
	b = openBook(getenv, "/w")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tools", "x", "cat", "{}"}, "cat"},
		{[]string{"ls"}, "ls"},
		{[]string{"--for", "list files", "ls", "-"}, "ls"},
		{[]string{"rm"}, ""},
	} {
		rc, ok := b.pick(c.args)
		if got := map[bool]string{true: rc.Tool}[ok]; got != c.want {
			t.Errorf("pick(%q) = %q, want %q", c.args, got, c.want)
		}
	}
	// Another working directory has a book of its own; a recipe of
	// another directory in this one is not picked.
	if other := openBook(getenv, "/v"); len(other.rcs) != 0 {
		t.Errorf("another working directory's book holds %d recipes", len(other.rcs))
	}
	stray := recipe("du")
	stray.Dir = "/v"
	b.rcs = append(b.rcs, stray)
	if _, ok := b.pick([]string{"du"}); ok {
		t.Error("picked a recipe of another working directory")
	}
	b.rcs = b.rcs[:len(b.rcs)-1]
	// The same call again changes nothing: no write (a write is a new
	// file renamed in place).
	inode := func() uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(b.path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	was := inode()
	b.remember(recipe("ls"))
	if inode() != was {
		t.Error("remembering the recipe read first wrote the file again")
	}
	if b.remember(recipe("cat")); inode() == was {
		t.Error("a recipe put first was not written")
	}
	b.remember(recipe("ls"))
	if len(b.rcs) != 2 || b.rcs[0].Tool != "ls" {
		t.Fatalf("recipes %+v, want ls then cat", b.rcs)
	}
	for i := range recipesPerDir + 3 {
		b.remember(recipe(fmt.Sprintf("t%d", i)))
	}
	if b = openBook(getenv, "/w"); len(b.rcs) != recipesPerDir || b.rcs[0].Tool != fmt.Sprintf("t%d", recipesPerDir+2) {
		t.Errorf("%d recipes, the first %q; want %d, the latest first", len(b.rcs), b.rcs[0].Tool, recipesPerDir)
	}
	// Not private: passed over.
	if err := os.Chmod(b.path, 0o620); err != nil {
		t.Fatal(err)
	}
	if b := openBook(getenv, "/w"); len(b.rcs) != 0 {
		t.Errorf("a group-writable recipes file was read: %d recipes", len(b.rcs))
	}
	// A symbolic link: passed over.
	os.Chmod(b.path, 0o600)
	other := b.path + ".real"
	if err := os.Rename(b.path, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, b.path); err != nil {
		t.Fatal(err)
	}
	if b := openBook(getenv, "/w"); len(b.rcs) != 0 {
		t.Errorf("recipes read through a symbolic link: %d recipes", len(b.rcs))
	}
}

// Only the recipeFiles working directories written last keep recipes;
// temporary files a killed writer left go too.
func TestRecipeFilesPruned(t *testing.T) {
	dir := t.TempDir()
	for i := range recipeFiles + 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.json", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale, fresh := filepath.Join(dir, ".00.json.1.tmp"), filepath.Join(dir, ".01.json.2.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	prune(dir, recipeFiles)
	ents, _ := os.ReadDir(dir)
	if len(ents) != recipeFiles+1 {
		t.Errorf("%d files after pruning, want %d and a live writer's temporary file", len(ents), recipeFiles)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a killed writer's temporary file is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a live writer's temporary file was removed: %v", err)
	}
}

// The call's working directory, before its flags are parsed: --cwd's,
// resolved, else the process's.
func TestCallDir(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(real)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tools", "x", "ls"}, real},
		{[]string{"--cwd", link, "ls"}, real},
		{[]string{"-cwd=" + link, "ls", "{}"}, real},
		{[]string{"--cwd=/", "ls"}, "/"},
	} {
		if got := callDir(c.args); got != c.want {
			t.Errorf("callDir(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
