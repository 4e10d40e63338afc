package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
)

// TestMain lets the test binary be the sandbox helper of the examples'
// calls (as the toolsrv binary is the helper of its own: see
// exec.Options.SelfExe).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == exec.HelperArg {
		os.Exit(exec.HelperMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// quiet is a logger for the examples: what they print is their output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A prompt assembler: which tools go in the prompt for the user's message,
// then the call of the one the model chose. The call names the same
// session (Caller) as the request: it follows the answer that offered the
// tool, and the usage history (Options.Usage) links the two. The runner
// re-executes SelfExe as the sandbox helper (the toolsrv binary; here the
// test binary, see TestMain).
func Example() {
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"testdata/tools"}, NoCache: true, Logger: quiet,
		Runner: &exec.Options{SelfExe: self, Logger: quiet}})
	if err != nil {
		log.Fatal(err) // a tool directory that cannot be read, thresholds that do not load, ...
	}
	defer eng.Close()
	who := engine.Caller{Session: "chat-42", Agent: "assistant"}
	for _, msg := range []string{"what's the weather like on mars", "is my disk full?"} {
		ans, err := eng.Rank(ctx, engine.Request{Query: msg, Context: []string{"my downloads keep failing"}, Caller: who})
		if err != nil {
			log.Fatal(err)
		}
		if ans.Degraded {
			fmt.Println("lexical ranking only:", ans.DegradedReason) // the embedder failed; it still answers
		}
		if ans.NoToolFits {
			fmt.Printf("%q: no tool fits\n", msg) // ans.Reason says why
			continue
		}
		fmt.Printf("%q: offer %v\n", msg, ans.Names()) // ans.Tools: name, score, hot
		res, err := eng.Call(ctx, engine.CallRequest{Tool: ans.Tools[0].Name, Arguments: []byte(`{}`), Caller: who,
			Context: exec.CallContext{WorkDir: os.TempDir()}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: exit %d\n", ans.Tools[0].Name, res.ExitCode)
	}
	// Output:
	// "what's the weather like on mars": no tool fits
	// "is my disk full?": offer [disk_usage]
	// disk_usage: exit 0
}

// An engine over one tool directory, with the built-in embedder and the
// shipped thresholds. NoCache keeps the index in memory (a real front end
// caches it under the user's cache directory, so that a restart with
// nothing changed embeds nothing).
func ExampleNew() {
	ctx := context.Background()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"testdata/tools"}, NoCache: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	for _, t := range eng.Catalog().Tools {
		fmt.Printf("%s: %s\n", t.Name, t.Description)
	}
	// Output:
	// disk_usage: Show how full each file system is.
	// echo_args: Print the arguments the tool was called with, as JSON.
	// find_todos: Find TODO and FIXME comments in the source files under the working directory.
	// git_status: Show the working tree status: which files changed, which are staged, which are untracked.
}

// Rank decides which tools go in the prompt for a message: the offered
// ones, best first, or none when no tool fits. A weak best match that
// shares no word with the message is offered alone, never padded with
// others like it.
func ExampleEngine_Rank() {
	ctx := context.Background()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"testdata/tools"}, NoCache: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	for _, msg := range []string{
		"show me what changed in my git working tree",
		"is my disk full?",
		"what's the weather like on mars",
		"xqzzv plorbt wuggle",
	} {
		ans, err := eng.Rank(ctx, engine.Request{Query: msg})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q: offered %v, no tool fits: %v\n", msg, ans.Names(), ans.NoToolFits)
	}
	// Output:
	// "show me what changed in my git working tree": offered [git_status], no tool fits: false
	// "is my disk full?": offered [disk_usage], no tool fits: false
	// "what's the weather like on mars": offered [], no tool fits: true
	// "xqzzv plorbt wuggle": offered [], no tool fits: true
}

// Call runs a tool in the sandbox: its arguments, checked against its
// schema, reach it as JSON on standard input, in the working directory of
// the call. The runner re-executes SelfExe as the sandbox helper (the
// toolsrv binary; here the test binary, see TestMain).
func ExampleEngine_Call() {
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"testdata/tools"}, NoIndex: true, Logger: quiet,
		Runner: &exec.Options{SelfExe: self, Logger: quiet}})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	work, err := os.MkdirTemp("", "example-call-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	cc := exec.CallContext{WorkDir: work, Session: "example", Agent: "doc"}
	res, err := eng.Call(ctx, engine.CallRequest{Tool: "echo_args", Arguments: []byte(`{"name": "gopher"}`), Context: cc})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
	// Arguments that do not fit the schema never start the tool.
	_, err = eng.Call(ctx, engine.CallRequest{Tool: "echo_args", Arguments: []byte(`{"nom": "gopher"}`), Context: cc})
	fmt.Println(err)
	// Output:
	// exit 0: {"name":"gopher"}
	// tool echo_args: invalid arguments: nothing was run: arguments do not match the schema of echo_args:
	// - at '': missing property 'name'
}

// A transport is a few lines over a Frontend: here HTTP with JSON, the
// Request in and the Answer out, the same JSON 9P and MCP speak. (toolsrv
// ships no HTTP transport; this is how one would look.)
func ExampleFrontend() {
	ctx := context.Background()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"testdata/tools"}, NoCache: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	var fe engine.Frontend = eng
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rank", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := engine.DecodeRequest(body) // the JSON MCP and 9P take
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Caller = engine.Caller{Transport: "http", Client: r.RemoteAddr}
		ans, err := fe.Rank(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(ans)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/rank", "application/json", strings.NewReader(`{"query": "any TODO left in the code?", "limit": 1}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var ans engine.Answer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		log.Fatal(err)
	}
	fmt.Println(ans.Names(), ans.ID != "")
	// Output:
	// [find_todos] true
}

// docs/library.md shows Example's code as it is: the doc's example runs as
// a test, with its output checked.
func TestLibraryDocShowsTheExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```go\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	_, body, ok3 := strings.Cut(string(src), "\nfunc Example() {\n")
	body, _, ok4 := strings.Cut(body, "\t// Output:")
	if !ok || !ok2 || !ok3 || !ok4 {
		t.Fatal("docs/library.md has no ```go block, or example_test.go no Example with output")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if want := strings.Join(lines, "\n") + "\n"; block != want {
		t.Errorf("docs/library.md's example:\n%s\nis not Example's code:\n%s", block, want)
	}
}
