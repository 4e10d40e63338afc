package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/usage"
)

// recorded is a usage store that also keeps every event recorded, in
// order, as "request → tool ok [offered] source/agent principal".
type recorded struct {
	usage.Store
	mu     sync.Mutex
	events []string
}

func (r *recorded) Record(ctx context.Context, evs ...usage.Event) error {
	r.mu.Lock()
	for _, ev := range evs {
		tool := ev.Tool
		if tool == "" {
			tool = "(no tool)"
		}
		r.events = append(r.events, fmt.Sprintf("%s → %s %v %v %s/%s %s", ev.Request, tool, ev.OK, ev.Offered, ev.Source, ev.Agent, ev.Principal))
	}
	r.mu.Unlock()
	return r.Store.Record(ctx, evs...)
}

// The capture rule, written once in the engine: which answer a call or a
// load follows, and what each records, whatever the transport. The first
// case is the sequence a 9P agent tripped on: a ranking that offered
// nothing ("order a pizza"), then a load and a call of a tool an earlier
// answer offered: that answer is credited, and nothing is recorded for
// "order a pizza".
func TestCaptureRule(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	for name, meta := range map[string]string{
		"git_status": `{"description": "Show the working tree status: which files changed, which are staged, which are untracked.", "keywords": ["git status", "what changed", "modified files"], "cmd": "true", "readOnly": true}`,
		"disk_usage": `{"description": "Show how full each file system is.", "keywords": ["disk space", "df", "free space"], "cmd": "true", "readOnly": true}`,
		"find_todos": `{"description": "Find TODO and FIXME comments in the source files under the working directory.", "keywords": ["todo", "fixme"], "cmd": "exit 1", "readOnly": true,
		                "args": {"type": "object", "properties": {"dir": {"type": "string"}}, "additionalProperties": false}}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const (
		git   = "show me what changed in my git working tree"
		pizza = "order a pizza"
		disk  = "is my disk full?"
		todo  = "any TODO left in the code?"
	)
	agent := engine.Caller{Transport: "9p", Client: "9p:a", Session: "s", Agent: "a"}
	other := engine.Caller{Transport: "9p", Client: "9p:b", Session: "s", Agent: "b"}
	api := engine.Caller{Session: "x"}
	byTool := agent
	byTool.ByTool = true
	owner := engine.Caller{Transport: "cli", Client: "owner"}

	// A step: rank (query), call or load (tool, as caller).
	type step struct {
		rank, call, load string
		who              engine.Caller
		cite             string // "answer N": the Nth answer's ID (from 1)
		none             bool   // the client says no tool fits (cite: which answer)
		request          string // CallRequest.Request
		args             string
	}
	// One client in six sessions, five new requests in each: its sessions
	// share its allowance (unitBurst, 20), so the last ten are not taken.
	var churn []step
	var churnWant []string
	for i := range 30 {
		who := engine.Caller{Transport: "9p", Client: "9p:c", Session: fmt.Sprint("s", i/5), Agent: "c"}
		req := fmt.Sprint("churn ", i)
		churn = append(churn, step{call: "disk_usage", who: who, request: req})
		if i < 20 {
			churnWant = append(churnWant, fmt.Sprintf("%s → disk_usage true [] 9p/c 9p:c", req))
		}
	}

	for _, tc := range []struct {
		name  string
		steps []step
		want  []string
	}{
		{"an earlier answer's tool after a ranking that offered nothing", []step{
			{rank: git, who: agent}, {rank: pizza, who: agent}, {load: "git_status", who: agent}, {call: "git_status", who: agent},
		}, []string{git + " → git_status true [git_status] 9p/a 9p:a"}},
		{"an answer nothing followed records nothing", []step{
			{rank: pizza, who: agent},
		}, nil},
		{"the client says no tool fits: answered without a tool", []step{
			{rank: pizza, who: agent}, {none: true, who: agent},
		}, []string{pizza + " → (no tool) true [] 9p/a 9p:a"}},
		{"the client says no tool fits, citing an answer", []step{
			{rank: pizza, who: agent}, {rank: disk, who: agent}, {none: true, who: agent, cite: "answer 1"},
		}, []string{pizza + " → (no tool) true [] 9p/a 9p:a"}},
		{"another session cannot say it of an answer", []step{
			{rank: pizza, who: other}, {none: true, who: agent, cite: "answer 1"},
		}, nil},
		{"a one-off ranking records nothing", []step{
			{rank: pizza, who: owner},
		}, nil},
		{"a load the call did not follow: recorded once the answer is forgotten", []step{
			{rank: disk, who: agent}, {load: "disk_usage", who: agent},
		}, []string{disk + " → disk_usage true [disk_usage] 9p/a 9p:a"}},
		{"a load and its call count once", []step{
			{rank: disk, who: agent}, {load: "disk_usage", who: agent}, {call: "disk_usage", who: agent},
		}, []string{disk + " → disk_usage true [disk_usage] 9p/a 9p:a"}},
		{"a tool no answer offered follows the latest answer", []step{
			{rank: disk, who: agent}, {rank: git, who: agent}, {call: "find_todos", who: agent},
		}, []string{git + " → find_todos false [git_status] 9p/a 9p:a"}},
		{"another session's answer is not followed", []step{
			{rank: git, who: other}, {call: "git_status", who: agent},
		}, nil},
		{"an answer cited by its own session links any tool", []step{
			{rank: git, who: agent}, {call: "disk_usage", who: agent, cite: "answer 1"},
		}, []string{git + " → disk_usage true [git_status] 9p/a 9p:a"}},
		{"an answer cited by another session is not", []step{
			{rank: git, who: other}, {call: "git_status", who: agent, cite: "answer 1"},
		}, nil},
		{"a failed call is recorded as failed", []step{
			{rank: todo, who: agent}, {call: "find_todos", who: agent},
		}, []string{todo + " → find_todos false [find_todos] 9p/a 9p:a"}},
		{"a call that did not run is no use", []step{
			{rank: todo, who: agent}, {call: "find_todos", who: agent, args: `{"nope": 1}`},
		}, nil},
		{"a tool's own connection records nothing", []step{
			{rank: disk, who: agent}, {load: "disk_usage", who: byTool}, {call: "disk_usage", who: byTool},
		}, nil},
		{"the request the call gives (call --for)", []step{
			{call: "disk_usage", who: owner, request: disk}, {call: "disk_usage", who: owner},
		}, []string{disk + " → disk_usage true [] cli/ owner"}},
		{"a program that names no client is the api", []step{
			{call: "disk_usage", who: api, request: disk},
		}, []string{disk + " → disk_usage true [] api/ api"}},
		{"a session adds evidence at a bounded rate; its repeats and the owner's are free", []step{
			{call: "disk_usage", who: agent, request: "disk 1"}, {call: "disk_usage", who: agent, request: "disk 2"},
			{call: "disk_usage", who: agent, request: "disk 3"}, {call: "disk_usage", who: agent, request: "disk 4"},
			{call: "disk_usage", who: agent, request: "disk 5"}, {call: "disk_usage", who: agent, request: "disk 6"},
			{call: "disk_usage", who: agent, request: "disk 1"}, {call: "git_status", who: agent, request: "disk 1"},
			{call: "disk_usage", who: other, request: "disk 6"},
			{call: "disk_usage", who: owner, request: "disk 7"}, {call: "disk_usage", who: owner, request: "disk 8"},
			{call: "disk_usage", who: owner, request: "disk 9"}, {call: "disk_usage", who: owner, request: "disk 10"},
			{call: "disk_usage", who: owner, request: "disk 11"}, {call: "disk_usage", who: owner, request: "disk 12"},
		}, []string{
			"disk 1 → disk_usage true [] 9p/a 9p:a", "disk 2 → disk_usage true [] 9p/a 9p:a", "disk 3 → disk_usage true [] 9p/a 9p:a",
			"disk 4 → disk_usage true [] 9p/a 9p:a", "disk 5 → disk_usage true [] 9p/a 9p:a", "disk 1 → disk_usage true [] 9p/a 9p:a",
			"disk 6 → disk_usage true [] 9p/b 9p:b",
			"disk 7 → disk_usage true [] cli/ owner", "disk 8 → disk_usage true [] cli/ owner", "disk 9 → disk_usage true [] cli/ owner",
			"disk 10 → disk_usage true [] cli/ owner", "disk 11 → disk_usage true [] cli/ owner", "disk 12 → disk_usage true [] cli/ owner",
		}},
		{"new sessions of one client do not renew its allowance", churn, churnWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, _, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorded{Store: st}
			eng, err := engine.New(ctx, engine.Options{Dirs: []string{tools}, NoCache: true, Logger: quiet, Usage: rec,
				Runner: &exec.Options{SelfExe: self, Logger: quiet}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range tc.steps {
				switch {
				case s.rank != "":
					a, err := eng.Rank(ctx, engine.Request{Query: s.rank, Caller: s.who})
					if err != nil {
						t.Fatal(err)
					}
					if (s.rank == pizza) != a.NoToolFits {
						t.Fatalf("%q: offered %v", s.rank, a.Names())
					}
					ids = append(ids, a.ID)
				case s.load != "":
					eng.Loaded(s.who, s.load)
				case s.none:
					cited := ""
					if s.cite != "" {
						var n int
						fmt.Sscanf(s.cite, "answer %d", &n)
						cited = ids[n-1]
					}
					err := eng.NoToolFits(s.who, cited)
					if (err != nil) != (s.who != agent || tc.want == nil) {
						t.Errorf("NoToolFits: %v", err)
					}
				default:
					c := engine.CallRequest{Tool: s.call, Arguments: []byte(s.args), Caller: s.who, Request: s.request,
						Context: exec.CallContext{WorkDir: t.TempDir(), Session: s.who.Session, Agent: s.who.Agent}}
					if s.cite != "" {
						var n int
						fmt.Sscanf(s.cite, "answer %d", &n)
						c.Answer = ids[n-1]
					}
					eng.Call(ctx, c)
				}
			}
			eng.Close() // every answer is forgotten: what they led to is recorded
			if !reflect.DeepEqual(rec.events, tc.want) {
				t.Errorf("recorded\n\t%s\nwant\n\t%s", strings.Join(rec.events, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}
