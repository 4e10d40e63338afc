package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/index"
)

// rankFixture writes a small catalog and returns its directory.
func rankFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"get_weather": `{"description":"Current weather and forecast for a city.","keywords":["temperature","rain"],"args":{"type":"object","properties":{"city":{"type":"string","description":"city name"}},"required":["city"]}}`,
		"send_email":  `{"description":"Send an email message to a recipient.","keywords":["mail"],"args":{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}}}}`,
		"git_status":  `{"description":"Show the working tree status of a git repository.","keywords":["vcs"]}`,
		"read_file":   `{"description":"Read a text file and return its contents.","keywords":["open","cat"]}`,
		"calculator":  `{"description":"Evaluate an arithmetic expression.","keywords":["math","sum"]}`,
	}
	for n, meta := range files {
		meta = strings.TrimSuffix(meta, "}") + `,"cmd":"cat"}`
		if err := os.WriteFile(filepath.Join(dir, n+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCLIWith(t *testing.T, stdin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	home := t.TempDir()
	e := &cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "HOME" {
			return home
		}
		return ""
	}}
	code := dispatch(context.Background(), e, args)
	return code, out.String(), errb.String()
}

func TestRankMessage(t *testing.T) {
	dir := rankFixture(t)
	cache := t.TempDir()
	code, out, errs := runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--all", "--k", "3", "what's the temperature in Rome")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "get_weather") {
		t.Fatalf("output:\n%s", out)
	}

	code, out, _ = runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--all", "--json", "--k", "2", "--mode", "bm25", "please use the calculator tool on these numbers")
	var r index.Ranking
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(r.Hits) != 2 || r.Hits[0].Name != "calculator" || !r.Hits[0].Named || r.Hits[0].Score != 1 {
		t.Fatalf("ranking %+v", r)
	}
}

func TestRankCachesUnderHome(t *testing.T) {
	dir, home := rankFixture(t), t.TempDir()
	for i := 0; i < 2; i++ {
		if code, _, errs := runCLIWith(t, "", map[string]string{"HOME": home}, "rank", "--tools", dir, "git status"); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	files, _ := filepath.Glob(filepath.Join(home, ".cache", "toolsrv", "*", "index-*.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files under $HOME/.cache/toolsrv: %v", files)
	}
	xdg := t.TempDir()
	runCLIWith(t, "", map[string]string{"HOME": home, "XDG_CACHE_HOME": xdg}, "rank", "--tools", dir, "git status")
	if files, _ := filepath.Glob(filepath.Join(xdg, "toolsrv", "*", "index-*.gob")); len(files) != 1 {
		t.Fatalf("$XDG_CACHE_HOME not honoured: %v", files)
	}
}

// The caches under $XDG_CACHE_HOME/toolsrv are their owner's alone: a
// toolsrv directory that others may enter (an older toolsrv made it 0755)
// is made 0700 at the next start, which says so, and every file in it is
// 0600.
func TestRankCacheIsPrivate(t *testing.T) {
	dir, xdg := rankFixture(t), t.TempDir()
	own := filepath.Join(xdg, "toolsrv")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(own, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CACHE_HOME": xdg}
	code, _, errs := runCLIWith(t, "", env, "rank", "--tools", dir, "git status")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "private"); n != 1 {
		t.Errorf("said %d times that it made a directory private, want once:\n%s", n, errs)
	}
	var files int
	filepath.WalkDir(own, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if files < 3 { // the index, its lexical cache, the catalog snapshot
		t.Errorf("%d cache files, want the index, the lexical cache and the catalog snapshot", files)
	}
	if _, _, errs := runCLIWith(t, "", env, "rank", "--tools", dir, "git status"); strings.Contains(errs, "private") {
		t.Errorf("the second start changed a mode again:\n%s", errs)
	}
}

func TestRankAgentProfile(t *testing.T) {
	dir, home := rankFixture(t), t.TempDir()
	agents := filepath.Join(home, ".config", "ollie", "agents")
	os.MkdirAll(agents, 0o755)
	os.WriteFile(filepath.Join(agents, "mailer.json"), []byte(`{"allowTools":["send_email","calculator"]}`), 0o644)
	code, out, errs := runCLIWith(t, "", map[string]string{"HOME": home}, "rank", "--tools", dir, "--no-cache", "--all", "--agent", "mailer", "--json", "weather in Rome")
	var r index.Ranking
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errs)
	}
	if len(r.Hits) != 2 {
		t.Fatalf("profile not applied: %+v", r.Hits)
	}
	for _, h := range r.Hits {
		if h.Name != "send_email" && h.Name != "calculator" {
			t.Fatalf("tool %s outside the profile", h.Name)
		}
	}
}

func TestRankFormats(t *testing.T) {
	dir := rankFixture(t)
	for _, format := range []string{"openai", "ollama", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			code, out, errs := runCLIWith(t, "", nil, "rank", "--tools", dir, "--no-cache", "--all", "--k", "2", "--format", format, "weather forecast for Paris")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var defs []map[string]any
			if err := json.Unmarshal([]byte(out), &defs); err != nil || len(defs) != 2 {
				t.Fatalf("%v:\n%s", err, out)
			}
			d := defs[0]
			var name string
			var schema map[string]any
			if format == "anthropic" {
				name, _ = d["name"].(string)
				schema, _ = d["input_schema"].(map[string]any)
			} else {
				fn, _ := d["function"].(map[string]any)
				if d["type"] != "function" || fn == nil {
					t.Fatalf("not a function tool: %v", d)
				}
				name, _ = fn["name"].(string)
				schema, _ = fn["parameters"].(map[string]any)
			}
			if name != "get_weather" || schema["type"] != "object" || schema["properties"] == nil {
				t.Fatalf("definition %v", d)
			}
			if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "city" {
				t.Fatalf("schema not carried through: %v", schema)
			}
		})
	}
	if code, _, errs := runCLIWith(t, "", nil, "rank", "--tools", dir, "--format", "gemini", "x"); code != 2 || !strings.Contains(errs, "unknown --format") {
		t.Fatalf("bad format: exit %d, %s", code, errs)
	}
}

func TestRankBatch(t *testing.T) {
	dir := rankFixture(t)
	in := `{"id":"q1","query":"send a mail to Bob"}
{"id":2,"query":"is my git repo clean"}

{"id":"q3","query":"open the file notes.txt"}
`
	path := filepath.Join(t.TempDir(), "queries.jsonl")
	os.WriteFile(path, []byte(in), 0o644)
	for _, src := range []struct{ arg, stdin string }{{path, ""}, {"-", in}} {
		code, out, errs := runCLIWith(t, src.stdin, nil, "rank", "--tools", dir, "--no-cache", "--batch", src.arg)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d lines:\n%s", len(lines), out)
		}
		wantID := []string{`"q1"`, `2`, `"q3"`}
		wantTop := []string{"send_email", "git_status", "read_file"}
		for i, l := range lines {
			var o struct {
				ID     json.RawMessage `json:"id"`
				Ranked []struct {
					Name  string  `json:"name"`
					Score float64 `json:"score"`
				} `json:"ranked"`
			}
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatal(err)
			}
			if string(o.ID) != wantID[i] || len(o.Ranked) != 5 || o.Ranked[0].Name != wantTop[i] {
				t.Fatalf("line %d: %s", i, l)
			}
			for j := 1; j < len(o.Ranked); j++ {
				if o.Ranked[j].Score > o.Ranked[j-1].Score {
					t.Fatalf("line %d not sorted: %s", i, l)
				}
			}
		}
	}
	os.WriteFile(path, []byte(`{"query":"no id"}`), 0o644)
	if code, _, errs := runCLIWith(t, "", nil, "rank", "--tools", dir, "--no-cache", "--batch", path); code != 1 || !strings.Contains(errs, ":1:") {
		t.Fatalf("missing id: exit %d, %s", code, errs)
	}
	if code, _, _ := runCLIWith(t, "", nil, "rank", "--tools", dir); code != 2 {
		t.Fatalf("no message: exit %d, want 2", code)
	}
}

// --batch --select adds each line's offered set and decision, the
// thresholds applied to the very ranking the line prints; the learned last
// step is on by default (answerability), off with --no-learned.
func TestRankBatchSelect(t *testing.T) {
	dir := rankFixture(t)
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	strict := filepath.Join(t.TempDir(), "strict.json")
	os.WriteFile(strict, []byte(fmt.Sprintf(`{"format":"toolsrv-thresholds","version":2,"embedder":%q,"policy":{"min":0,"coldMin":0,"relative":0,"maxTools":2,"minAnswerable":0.999,"mass":1}}`, emb.ID())), 0o644)
	in := "{\"id\":1,\"query\":\"send a mail to Bob\"}\n{\"id\":2,\"query\":\"is my git repo clean\"}\n"
	type line struct {
		Ranked     []struct{ Name string } `json:"ranked"`
		Offered    *[]string               `json:"offered"`
		NoToolFits *bool                   `json:"noToolFits"`
		Answerable *float64                `json:"answerable"`
	}
	for _, tc := range []struct {
		name    string
		args    []string
		none    bool
		learned bool
	}{
		{"shipped thresholds", nil, false, true},
		{"strict answerability", []string{"--thresholds", strict}, true, true},
		{"fixed fusion", []string{"--no-learned"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"rank", "--tools", dir, "--no-cache", "--batch", "-", "--select"}, tc.args...)
			code, out, errs := runCLIWith(t, in, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var o line
				if err := json.Unmarshal([]byte(l), &o); err != nil {
					t.Fatal(err)
				}
				if o.Offered == nil || o.NoToolFits == nil || *o.NoToolFits != tc.none || (len(*o.Offered) == 0) != tc.none {
					t.Fatalf("line %d: %s", i, l)
				}
				if (o.Answerable != nil) != tc.learned {
					t.Fatalf("line %d: answerable present %v, want %v: %s", i, o.Answerable != nil, tc.learned, l)
				}
				if !tc.none && (*o.Offered)[0] != o.Ranked[0].Name {
					t.Fatalf("line %d: offered %v, ranked first %s", i, *o.Offered, o.Ranked[0].Name)
				}
			}
		})
	}
}

// With Ollama selected but no server, rank still answers, lexically, and
// says so.
func TestRankOllamaDownDegrades(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	dir := rankFixture(t)
	code, out, errs := runCLIWith(t, "", map[string]string{"OLLAMA_HOST": addr},
		"rank", "--tools", dir, "--no-cache", "--embedder", "ollama", "--all", "--k", "1", "--json", "weather in Rome")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r index.Ranking
	json.Unmarshal([]byte(out), &r)
	if !r.Degraded || len(r.Hits) != 1 || r.Hits[0].Name != "get_weather" {
		t.Fatalf("ranking %+v", r)
	}
	if !strings.Contains(errs, "no ollama server at http://"+addr) || !strings.Contains(errs, "degraded") {
		t.Fatalf("stderr does not say what happened:\n%s", errs)
	}
}

// fakeOllamaEmbed is a minimal /api/embed server (a contract fake: the
// documented request and response shapes) whose vectors are bags of words
// hashed into 64 dimensions, so that similar texts get similar vectors.
func fakeOllamaEmbed(t *testing.T) (addr string, requests *int) {
	t.Helper()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		n++
		embs := make([][]float32, len(req.Input))
		for i, s := range req.Input {
			v := make([]float32, 64)
			v[0] = 0.1
			for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r < 'a' || r > 'z' }) {
				h := fnv.New32a()
				h.Write([]byte(strings.TrimSuffix(w, "s")))
				v[1+h.Sum32()%63]++
			}
			embs[i] = v
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": embs})
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

func TestRankWithOllama(t *testing.T) {
	addr, requests := fakeOllamaEmbed(t)
	dir, cache := rankFixture(t), t.TempDir()
	env := map[string]string{"OLLAMA_HOST": addr}
	code, out, errs := runCLIWith(t, "", env, "rank", "--tools", dir, "--cache", cache, "--embedder", "ollama", "--all", "--json", "--k", "1", "--mode", "dense", "send mail")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r index.Ranking
	json.Unmarshal([]byte(out), &r)
	if r.Degraded || len(r.Hits) != 1 || r.Hits[0].Name != "send_email" {
		t.Fatalf("ranking %+v\n%s", r, errs)
	}
	if *requests != 2 { // one batch of 5 documents, one query
		t.Fatalf("%d requests, want 2", *requests)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "index-*.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	// A second run reuses the vectors: only the query is embedded.
	runCLIWith(t, "", env, "rank", "--tools", dir, "--cache", cache, "--embedder", "ollama", "send mail")
	if *requests != 3 {
		t.Fatalf("%d requests after a rerun, want 3", *requests)
	}
}

// Without --all, the thresholds decide: a named tool is offered, a message
// no tool fits says so (and offers nothing), the agent's hot tools are
// always offered, and a thresholds file given with --thresholds is used.
func TestRankThresholds(t *testing.T) {
	dir, home := rankFixture(t), t.TempDir()
	agents := filepath.Join(home, ".config", "ollie", "agents")
	os.MkdirAll(agents, 0o755)
	os.WriteFile(filepath.Join(dir, "always.meta"), []byte(`{"description":"Always at hand.","cmd":"cat","tier":"hot"}`), 0o644)
	os.WriteFile(filepath.Join(agents, "helper.json"), []byte(`{"autoLoad":["always"]}`), 0o644)
	strict := filepath.Join(home, "strict.json")
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(strict, []byte(fmt.Sprintf(`{"format":"toolsrv-thresholds","version":1,"embedder":%q,"policy":{"min":0.99,"coldMin":0.99,"relative":0,"maxTools":3}}`, emb.ID())), 0o644)
	env := map[string]string{"HOME": home}
	type sel struct {
		Selection struct {
			Tools []struct {
				Name, Why string
			}
			NoToolFits bool
			Reason     string
		}
	}
	tests := []struct {
		name      string
		args      []string
		want      []string
		noneFits  bool
		textWants string
	}{
		{"named tool offered", []string{"--json", "please use the calculator tool"}, []string{"calculator"}, false, ""},
		{"nothing fits", []string{"--json", "xqzzv plorbt wuggle"}, nil, true, ""},
		{"nothing fits, said in the table output", []string{"xqzzv plorbt wuggle"}, nil, true, "no tool fits"},
		{"agent's hot tool always offered", []string{"--json", "--agent", "helper", "xqzzv plorbt wuggle"}, []string{"always"}, true, ""},
		{"no agent: hot tool not forced", []string{"--json", "please use the calculator tool"}, []string{"calculator"}, false, ""},
		{"strict thresholds file", []string{"--json", "--thresholds", strict, "weather forecast for Paris"}, nil, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"rank", "--tools", dir, "--no-cache"}, tc.args...)
			code, out, errs := runCLIWith(t, "", env, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if tc.textWants != "" {
				if !strings.Contains(out, tc.textWants) {
					t.Fatalf("output lacks %q:\n%s", tc.textWants, out)
				}
				return
			}
			var v sel
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			var got []string
			for _, o := range v.Selection.Tools {
				got = append(got, o.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") || v.Selection.NoToolFits != tc.noneFits {
				t.Fatalf("offered %v (noToolFits=%v, %s), want %v (noToolFits=%v)", got, v.Selection.NoToolFits, v.Selection.Reason, tc.want, tc.noneFits)
			}
		})
	}
}

// --agent NAME without a profile file is an error that names the file
// expected and the agents directory, not a ranking of everything.
func TestRankUnknownAgent(t *testing.T) {
	dir, home := rankFixture(t), t.TempDir()
	agents := filepath.Join(home, ".config", "ollie", "agents")
	cases := []struct {
		name   string
		setup  func(t *testing.T)
		stderr []string
	}{
		{"no agents directory", func(*testing.T) {}, []string{
			`no profile for agent "mailr": ` + filepath.Join(agents, "mailr.json") + " does not exist",
			"agents directory " + agents + ", which does not exist"}},
		{"a typo of a profile", func(t *testing.T) {
			if err := os.MkdirAll(agents, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"mailer", "coder"} {
				if err := os.WriteFile(filepath.Join(agents, n+".json"), []byte(`{"allowTools":["send_email"]}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{filepath.Join(agents, "mailr.json") + " does not exist", "profiles there: coder, mailer", "or leave out --agent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			code, out, errs := runCLIWith(t, "", map[string]string{"HOME": home}, "rank", "--tools", dir, "--no-cache", "--agent", "mailr", "send an email")
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and no ranking", code, out, errs)
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
		})
	}
}

// "toolsrv rank -" reads the message from standard input.
func TestRankMessageFromStdin(t *testing.T) {
	dir := rankFixture(t)
	code, out, errs := runCLIWith(t, "please use the calculator\ntool on these numbers\n", nil, "rank", "--tools", dir, "--no-cache", "--all", "--json", "-")
	var r index.Ranking
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errs)
	}
	if len(r.Hits) == 0 || r.Hits[0].Name != "calculator" || !r.Hits[0].Named {
		t.Fatalf("the message on stdin was not ranked: %+v", r.Hits)
	}
	if code, _, errs := runCLIWith(t, " \n", nil, "rank", "--tools", dir, "--no-cache", "-"); code != 2 || !strings.Contains(errs, "the message on standard input is empty") {
		t.Fatalf("empty stdin: exit %d, %s", code, errs)
	}
}

// rank --explain names, per ranked tool, the words it matched in which
// field and, for a tool left out, the rule that left it out; --json
// carries the same as "explain".
func TestRankExplain(t *testing.T) {
	dir := rankFixture(t)
	cache := t.TempDir()
	code, out, errOut := runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--no-usage", "--explain", "what is the weather in Paris")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\nwhy:\n", "get_weather", "offered\n", "matched: ", "description: weather", "left out by ", "matched: no word of the message"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--no-usage", "--explain", "--json", "what is the weather in Paris")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Explain struct {
			Tools []struct {
				Name    string `json:"name"`
				Offered bool   `json:"offered"`
				Rule    string `json:"rule"`
				Matched []struct {
					Field string   `json:"field"`
					Words []string `json:"words"`
				} `json:"matched"`
			} `json:"tools"`
		} `json:"explain"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(v.Explain.Tools) < 2 {
		t.Fatalf("explain = %+v", v.Explain)
	}
	first := v.Explain.Tools[0]
	if first.Name != "get_weather" || !first.Offered || len(first.Matched) == 0 {
		t.Errorf("first explained tool = %+v", first)
	}
	for _, te := range v.Explain.Tools[1:] {
		if !te.Offered && te.Rule == "" {
			t.Errorf("%s left out with no rule", te.Name)
		}
	}
}

// rank --limit 1 --explain names the limit as what left out a tool the
// thresholds offer, in the text and in --json, and the decision says
// what it cut.
func TestRankLimitExplained(t *testing.T) {
	dir := rankFixture(t)
	cache := t.TempDir()
	const q = "read the file and email it to bob"
	code, out, errOut := runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--no-usage", "--explain", q)
	if code != 0 || !strings.Contains(out, "send_email  ") || !strings.Contains(out, "read_file  ") {
		t.Fatalf("without a limit: exit %d, want read_file and send_email offered:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--no-usage", "--explain", "--limit", "1", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"; the limit of 1 tool left 1 out\n", "left out by limit: the thresholds offer it; the limit of 1 tool left it out\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "left out by offered") {
		t.Errorf("a tool is said to be left out by offered:\n%s", out)
	}
	code, out, errOut = runCLIWith(t, "", nil, "rank", "--tools", dir, "--cache", cache, "--no-usage", "--explain", "--json", "--limit", "1", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Tools   []struct{ Name string }
		Explain struct {
			Tools []struct {
				Name    string
				Offered bool
				Rule    string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Tools) != 1 {
		t.Fatalf("--json: %v, %d tools: %s", err, len(v.Tools), out)
	}
	limited := 0
	for _, te := range v.Explain.Tools {
		if te.Rule == "limit" && !te.Offered {
			limited++
		}
		if !te.Offered && te.Rule == "offered" {
			t.Errorf("%s: left out, with rule offered", te.Name)
		}
	}
	if limited != 1 {
		t.Errorf("%d tools with rule limit, want 1: %s", limited, out)
	}
}

// rank --explain on a miss ends the missed tool with concrete changes, one
// line each; made as they say (a keyword in the .meta; the thresholds
// file that tune --show --json prints, edited, given to --thresholds),
// each makes rank offer the tool.
func TestRankExplainSuggests(t *testing.T) {
	dir := rankFixture(t)
	cache := t.TempDir()
	const q = "is it sunny in Lyon today"
	rank := func(args ...string) (int, string, string) {
		return runCLIWith(t, "", nil, append([]string{"rank", "--tools", dir, "--cache", cache, "--no-usage"}, args...)...)
	}
	code, out, errOut := rank("--expect", "get_weather", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.HasPrefix(out, "SCORE") && strings.Contains(strings.SplitN(out, "\n\n", 2)[0], "get_weather") {
		t.Fatalf("%q offers get_weather already: pick a request it misses\n%s", q, out)
	}
	for _, want := range []string{"get_weather (expected)  ", "      → keyword: its text lacks \"sunny\"", "      → threshold: in the thresholds file, policy."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = rank("--json", "--expect", "get_weather", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Explain struct {
			Tools []struct {
				Name     string
				Expected bool
				Suggest  []struct {
					Kind       string
					Text       string
					Verified   bool
					Words      []string
					Thresholds []struct {
						Field    string
						From, To float64
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var words []string
	var changes []struct {
		Field    string
		From, To float64
	}
	for _, te := range v.Explain.Tools {
		if te.Name != "get_weather" || !te.Expected {
			continue
		}
		for _, s := range te.Suggest {
			switch s.Kind {
			case "keyword":
				words = s.Words
			case "threshold":
				changes = s.Thresholds
				if !s.Verified {
					t.Errorf("threshold suggestion not verified: %+v", s)
				}
			}
		}
	}
	if len(words) == 0 || len(changes) == 0 {
		t.Fatalf("--json: get_weather's keywords %v, thresholds %v:\n%s", words, changes, out)
	}

	// The thresholds: tune --show --json, edited as the suggestion says.
	code, shown, errOut := runCLIWith(t, "", nil, "tune", "--show", "--json")
	if code != 0 {
		t.Fatalf("tune --show --json: exit %d: %s", code, errOut)
	}
	var file map[string]any
	if err := json.Unmarshal([]byte(shown), &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		path := strings.Split(c.Field, ".")
		obj := file
		for _, p := range path[:len(path)-1] {
			obj = obj[p].(map[string]any)
		}
		obj[path[len(path)-1]] = c.To
	}
	b, _ := json.Marshal(file)
	thr := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(thr, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = rank("--thresholds", thr, q)
	if code != 0 || !strings.Contains(out, "get_weather") {
		t.Errorf("with %s: exit %d, get_weather not offered:\n%s%s", b, code, out, errOut)
	}

	// The keywords, in a copy of the .meta.
	path := filepath.Join(dir, "get_weather.meta")
	meta, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		m["keywords"] = append(m["keywords"].([]any), w)
	}
	meta, _ = json.Marshal(m)
	if err := os.WriteFile(path, meta, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = rank(q)
	if code != 0 || !strings.Contains(out, "get_weather") {
		t.Errorf("with keywords %v: exit %d, get_weather not offered:\n%s%s", words, code, out, errOut)
	}
}

// Every kind of suggestion the engine makes is in docs/ranking.md's
// table, where a user reading "→ KIND:" looks it up.
func TestSuggestionKindsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/ranking.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range engine.SuggestionKinds() {
		if !strings.Contains(string(b), "\n| `"+string(k)+"` |") {
			t.Errorf("docs/ranking.md's table of suggestions lacks %q", k)
		}
	}
}

// "expect" reaches the engine from every transport, and a tool the client
// may see is explained the same everywhere (its place, its rule, the
// same suggestions); a name no .meta defines is explained to the owner at
// the command line with what to do, and to an MCP or 9P client only as
// not among the tools it may be offered.
func TestExpectOnEveryTransport(t *testing.T) {
	bin := buildToolsrv(t)
	tools := rankFixture(t)
	const q = "is it sunny in Lyon"
	const req = `{"query":"` + q + `","expect":["get_weather","nosuch"]}`
	decode := func(from, s string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%s: %v: %s", from, err, s)
		}
		return m
	}
	answers := map[string]map[string]any{}
	r := runToolsrv(t, bin, "", "rank", "--tools", tools, "--no-cache", "--no-usage", "--json", "--expect", "get_weather", "--expect", "nosuch", q)
	if r.code != 0 {
		t.Fatalf("rank --json: exit %d: %s", r.code, r.stderr)
	}
	answers["rank --json"] = decode("rank --json", r.stdout)

	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", mcpProject(t), "--no-cache", "--no-usage")
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_tools","arguments":` + req + `}}`)
	m := p.await("find_tools' answer", safetyNet, hasID(2))
	res, _ := m["result"].(map[string]any)
	found, _ := res["structuredContent"].(map[string]any)
	if found == nil {
		t.Fatalf("find_tools: %v", m)
	}
	answers["find_tools"] = found

	addr, _, _ := startServeIn(t, tools, "--no-usage")
	code, out, errs := run9PCmd(t, addr, "", "write", "rank.json", req)
	if code != 0 {
		t.Fatalf("9p write rank.json: exit %d: %s", code, errs)
	}
	answers["9P rank.json"] = decode("9P rank.json", out)

	tool := func(a map[string]any, name string) map[string]any {
		ex, _ := a["explain"].(map[string]any)
		ts, _ := ex["tools"].([]any)
		for _, tv := range ts {
			if te, _ := tv.(map[string]any); te["name"] == name {
				return te
			}
		}
		return nil
	}
	ref := tool(answers["rank --json"], "get_weather")
	if ref == nil || ref["expected"] != true || ref["suggest"] == nil {
		t.Fatalf("rank --json: get_weather explained as %v, want expected with suggestions", ref)
	}
	if own := tool(answers["rank --json"], "nosuch"); own == nil || own["rule"] != "unknown" || own["suggest"] == nil {
		t.Errorf("rank --json: nosuch explained as %v, want unknown with what to do", own)
	}
	for from, a := range answers {
		if from == "rank --json" {
			continue
		}
		if got := tool(a, "get_weather"); !reflect.DeepEqual(got, ref) {
			t.Errorf("%s: get_weather explained as\n%v\nrank --json:\n%v", from, got, ref)
		}
		ns := tool(a, "nosuch")
		if ns == nil || ns["rule"] != "unknown" || ns["suggest"] != nil || strings.Contains(fmt.Sprint(ns), tools) {
			t.Errorf("%s: nosuch explained as %v, want unknown, no suggestion, no directory", from, ns)
		}
	}
}
