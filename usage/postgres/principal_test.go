package postgres

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// Two instances of one namespace: what each records under a principal is
// its own to itself, and the other instance's ("instance:ID/…") to the
// other; a row written by hand under A's ID without A's seal (a teammate
// with the namespace's password) is not A's owner to A; forgetting by
// principal removes what it names, on the server and in the reader's view.
func TestPrincipalsOfInstances(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	a := open(t, dsn, usage.Options{})
	b := open(t, dsn, usage.Options{})
	idA, idB := a.(*store).in.id, b.(*store).in.id
	if idA == idB {
		t.Fatalf("two instances with one ID %s", idA)
	}
	t0 := time.Now().Add(-time.Minute)
	if err := a.Record(ctx, usage.Event{Request: "show git status", Tool: "git_status", OK: true, Principal: usage.Owner, Time: t0}); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, usage.Event{Request: "show git status", Tool: "fortune", OK: true, Principal: usage.Owner, Time: t0},
		usage.Event{Request: "show git status", Tool: "fortune", OK: true, Agent: "a7", Principal: "9p:a7", Time: t0}); err != nil {
		t.Fatal(err)
	}
	// By hand, under A's ID, with no seal (and with a copied one of
	// another key): not A's owner.
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT namespace, '\x00'::bytea || hash, norm, text, 'fortune', 'forged', '`+idA+`/owner', seal, 5, 0, first, last, offered, version
		FROM toolsrv_usage_entries WHERE tool = 'git_status'`)
	principals := func(s usage.Store) map[string]string { // principal → tool
		es, _, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, e := range es {
			out[e.Key.Principal] += e.Key.Tool + " "
		}
		return out
	}
	gotA := principals(a)
	wantA := map[string]string{
		usage.Owner:                           "git_status ",
		usage.PrefixInstance + idA + "/owner": "fortune ", // the forged row
		usage.PrefixInstance + idB + "/owner": "fortune ",
		usage.PrefixInstance + idB + "/9p:a7": "fortune ",
	}
	if !sameMap(gotA, wantA) {
		t.Errorf("A sees %v, want %v", gotA, wantA)
	}
	gotB := principals(b)
	wantB := map[string]string{
		usage.Owner:                           "fortune ",
		"9p:a7":                               "fortune ",
		usage.PrefixInstance + idA + "/owner": "git_status fortune ", // A's, and the forged one: neither sealed by B
	}
	if !sameMap(gotB, wantB) {
		t.Errorf("B sees %v, want %v", gotB, wantB)
	}
	for p, unit := range map[string]string{usage.PrefixInstance + idB + "/9p:a7": usage.PrefixInstance + idB, usage.Owner: usage.Owner} {
		if got := usage.Unit(p); got != unit {
			t.Errorf("Unit(%q) = %q, want %q", p, got, unit)
		}
	}

	// A forgets B's instance's agent: gone for both.
	if n, err := a.Forget(ctx, usage.Filter{Principal: usage.PrefixInstance + idB + "/9p:a7"}); err != nil || n != 1 {
		t.Fatalf("forget %s/9p:a7: %d %v", idB, n, err)
	}
	if got := principals(b); got["9p:a7"] != "" {
		t.Errorf("after forgetting it, B still sees 9p:a7: %v", got)
	}
	// B forgets its owner's.
	if n, err := b.Forget(ctx, usage.Filter{Principal: usage.Owner}); err != nil || n != 1 {
		t.Fatalf("B forgets its owner's: %d %v", n, err)
	}
	if got := principals(a); got[usage.PrefixInstance+idB+"/owner"] != "" || got[usage.Owner] == "" {
		t.Errorf("after B forgot its owner's entries, A sees %v", got)
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v && !sameWords(b[k], v) {
			return false
		}
	}
	return true
}

func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	m := map[string]int{}
	for _, w := range x {
		m[w]++
	}
	for _, w := range y {
		m[w]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// A database laid out by the toolsrv before principals (layout 1, with
// entries) is migrated when an instance opens it: every entry kept, its
// principal legacy:AGENT, under its new key's hash (a new event of the
// same key merges into it); readers of the old versions take the history
// whole again.
func TestMigrateLayout1(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	pg.SQL(t, `CREATE TABLE toolsrv_usage_schema (version integer NOT NULL)`, `INSERT INTO toolsrv_usage_schema VALUES (1)`)
	pg.SQL(t, migrations[0]...)
	t0 := time.Now().Add(-time.Hour)
	old := usage.Key{Request: "show git status", Tool: "git_status", Agent: "claude"}
	pg.SQL(t, `INSERT INTO toolsrv_usage_ns (namespace, version, horizon, entries) VALUES ('postgres', 100, 1, 2)`,
		`INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, count, failed, first, last, offered, version) VALUES
		('postgres', '\x`+hexOf(old.Hash())+`', 'show git status', 'Show git status', 'git_status', 'claude', 3, 0, `+nanos(t0)+`, `+nanos(t0)+`, '{}', 90),
		('postgres', '\x01', 'tell me a joke', 'tell me a joke', '', '', 1, 0, `+nanos(t0)+`, `+nanos(t0)+`, '{}', 95)`,
		`INSERT INTO toolsrv_usage_removed (namespace, version, hash, norm, tool, agent) VALUES ('postgres', 99, '\x02', 'gone', 't', 'a')`)
	s := open(t, dsn, usage.Options{})
	es, _, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[usage.Key]int64{}
	for _, e := range es {
		got[e.Key] = e.Count
	}
	want := map[usage.Key]int64{
		{Request: "show git status", Tool: "git_status", Agent: "claude", Principal: "legacy:claude"}: 3,
		{Request: "tell me a joke", Principal: "legacy:"}:                                             1,
	}
	if len(got) != len(want) {
		t.Fatalf("after the migration: %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%+v: %d calls, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if _, _, _, err := s.Changes(ctx, 95); err != usage.ErrResnapshot {
		t.Errorf("Changes after an old version: %v, want ErrResnapshot", err)
	}
	// The migrated entry's key hash is its new key's: a row of it is
	// found by it.
	k := usage.Key{Request: "show git status", Tool: "git_status", Agent: "claude", Principal: "legacy:claude"}
	if out := pg.SQL(t, `SELECT count(*) FROM toolsrv_usage_entries WHERE hash = '\x`+hexOf(k.Hash())+`'`); !strings.Contains(out, "1") {
		t.Errorf("no row under the migrated key's hash: %q", out)
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// As in the embedded store, the per-tool cap evicts the owner's entries
// last: a flood of another principal's new requests pushes out its own
// oldest, never the owner's.
func TestOwnerEvictedLast(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	s := open(t, dsn, usage.Options{PerTool: 5, PerAgentTool: -1})
	t0 := time.Now().Add(-time.Hour)
	for i := range 3 {
		if err := s.Record(ctx, usage.Event{Request: fmt.Sprint("mine ", i), Tool: "t", OK: true, Principal: usage.Owner, Time: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	// A client that names itself like the owner's stored principal
	// (ID/mcp:x/owner) is no owner.
	for i := range 20 {
		p := "mcp:flood"
		if i%2 == 1 {
			p = usage.MCPClient("x/owner")
		}
		if err := s.Record(ctx, usage.Event{Request: fmt.Sprint("flood ", i), Tool: "t", OK: true, Principal: p, Time: t0.Add(time.Duration(10+i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	es, _, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner, flood := 0, 0
	for _, e := range es {
		switch e.Key.Principal {
		case usage.Owner:
			owner++
		default:
			flood++
		}
	}
	if owner != 3 || flood != 2 {
		t.Errorf("kept %d of the owner's entries and %d of the flood's, want 3 and 2", owner, flood)
	}
}

// The seal covers the counts this instance wrote: a teammate (the same
// role) who raises the calls of this instance's owner's entry, in the row
// and even with a copied seal, changes nothing this instance believes; its
// next call counts on from its own counts and seals the row again; a row
// written by hand under its ID is started anew by its next call of that
// key.
func TestSealCoversCounts(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	a := open(t, dsn, usage.Options{})
	idA := a.(*store).in.id
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	status := usage.Event{Request: "show git status", Tool: "git_status", OK: true, Principal: usage.Owner, Time: t0}
	if err := a.Record(ctx, status); err != nil {
		t.Fatal(err)
	}
	owners := func() map[string]int64 { // tool → calls believed the owner's
		t.Helper()
		es, _, err := a.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, e := range es {
			if e.Key.Principal == usage.Owner {
				out[e.Key.Tool] += e.Count
			}
		}
		return out
	}
	// Raised by hand (and the version moved, so that A reads it again).
	bump := `UPDATE toolsrv_usage_ns SET version = version + 10`
	pg.SQL(t, `UPDATE toolsrv_usage_entries SET count = 500, failed = 0, version = version + 10 WHERE tool = 'git_status'`, bump)
	if got := owners(); got["git_status"] != 1 {
		t.Fatalf("after a teammate raised the row to 500 calls, A believes its owner called git_status %d times, want 1 (%v)", got["git_status"], got)
	}
	// A's next call: 2, and the row says so again, sealed.
	status.Time = t0.Add(time.Second)
	if err := a.Record(ctx, status); err != nil {
		t.Fatal(err)
	}
	if got := owners(); got["git_status"] != 2 {
		t.Errorf("after A's second call, A believes %d calls, want 2", got["git_status"])
	}
	if out := pg.SQL(t, `SELECT count FROM toolsrv_usage_entries WHERE tool = 'git_status'`); strings.TrimSpace(out) != "2" {
		t.Errorf("the row's count after A's second call: %q, want 2", out)
	}
	// A fresh reader of the same instance (its key, a new local copy)
	// reads the row whole: the same.
	b := open(t, dsn, usage.Options{LocalDir: a.(*store).opts.LocalDir})
	es, _, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Key.Principal != usage.Owner || es[0].Count != 2 {
		t.Errorf("read whole by the same instance: %+v, want the owner's entry with 2 calls", es)
	}
	// The seal of the owner's entry copied onto a row of another key
	// under A's ID: not A's owner; A's own call of that key starts it
	// anew.
	forged := usage.Key{Request: "show git status", Tool: "fortune", Principal: idA + "/owner"}
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT namespace, '\x`+hexOf(forged.Hash())+`', norm, text, 'fortune', '', principal, seal, 400, 0, first, last, offered, version + 20
		FROM toolsrv_usage_entries WHERE tool = 'git_status'`, `UPDATE toolsrv_usage_ns SET version = version + 20, entries = entries + 1`)
	if got := owners(); got["fortune"] != 0 || got["git_status"] != 2 {
		t.Errorf("with a forged row under A's ID, A believes its owner's calls %v, want git_status 2 and no fortune", got)
	}
	if err := a.Record(ctx, usage.Event{Request: "show git status", Tool: "fortune", OK: true, Principal: usage.Owner, Time: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := owners(); got["fortune"] != 1 {
		t.Errorf("after A's own call of the forged key, A believes %d calls of fortune, want 1 (started anew)", got["fortune"])
	}
	// A row under the hash of A's next key, with other key columns: A's
	// call of that key takes the row over (not a failed insert).
	next := usage.Key{Request: "list the branches", Tool: "git_branch", Principal: idA + "/owner"}
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT namespace, '\x`+hexOf(next.Hash())+`', 'something else', 'something else', 'fortune', 'x', 'x/owner', '', 9, 0, first, last, offered, version
		FROM toolsrv_usage_entries WHERE tool = 'git_status'`, `UPDATE toolsrv_usage_ns SET entries = entries + 1`)
	if err := a.Record(ctx, usage.Event{Request: "list the branches", Tool: "git_branch", OK: true, Principal: usage.Owner, Time: t0.Add(3 * time.Second)}); err != nil {
		t.Fatalf("A's call of a key whose hash a row written by hand holds: %v", err)
	}
	if got := owners(); got["git_branch"] != 1 {
		t.Errorf("after A's call of git_branch over a row written by hand, A believes %d calls, want 1 (%v)", got["git_branch"], got)
	}
}

// Forgetting a presented principal removes exactly what is presented
// under it: "instance:ME/owner" (rows under this instance's ID it did not
// seal) never takes this instance's owner's entries.
func TestForgetExactlyThePresented(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	a := open(t, dsn, usage.Options{})
	idA := a.(*store).in.id
	t0 := time.Now().Add(-time.Minute)
	if err := a.Record(ctx, usage.Event{Request: "show git status", Tool: "git_status", OK: true, Principal: usage.Owner, Time: t0}); err != nil {
		t.Fatal(err)
	}
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT namespace, '\x00'::bytea || hash, norm, text, 'fortune', 'forged', '`+idA+`/owner', '', 5, 0, first, last, offered, version
		FROM toolsrv_usage_entries WHERE tool = 'git_status'`)
	n, err := a.Forget(ctx, usage.Filter{Principal: usage.PrefixInstance + idA + "/owner"})
	if err != nil || n != 1 {
		t.Fatalf("forget instance:%s/owner: %d %v, want the forged row alone", idA, n, err)
	}
	es, _, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Key.Principal != usage.Owner || es[0].Key.Tool != "git_status" {
		t.Errorf("after forgetting the forged name: %+v, want the owner's git_status entry alone", es)
	}
}

// An instance's secret is of its own key: the same when it opens the
// namespace again (its LocalDir), another for another instance.
func TestInstanceSecret(t *testing.T) {
	_, dsn := server(t)
	dir := t.TempDir()
	a := open(t, dsn, usage.Options{LocalDir: dir}).(usage.Keyed).Secret("p")
	again := open(t, dsn, usage.Options{LocalDir: dir}).(usage.Keyed).Secret("p")
	other := open(t, dsn, usage.Options{}).(usage.Keyed).Secret("p")
	if len(a) != 32 || !bytes.Equal(a, again) || bytes.Equal(a, other) {
		t.Errorf("secrets: %x, again %x, another instance's %x", a, again, other)
	}
}

// A row's text changed by a teammate to other words than its key's is read
// as its key's (the ranking votes with the text; the store checks it, so
// that its readers need not), on the server and from the local copy.
func TestRowTextIsAWordingOfItsKey(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dsn, usage.Options{LocalDir: dir})
	if err := a.Record(ctx, usage.Event{Request: "Show  Git status", Tool: "git_status", OK: true, Principal: usage.Owner}); err != nil {
		t.Fatal(err)
	}
	pg.SQL(t, `UPDATE toolsrv_usage_entries SET text = 'print a fortune cookie', version = version + 10`,
		`UPDATE toolsrv_usage_ns SET version = version + 10`)
	for _, s := range []usage.Store{a, open(t, dsn, usage.Options{})} {
		es, _, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Text != "show git status" {
			t.Errorf("after the text was changed by hand: %+v, want the key's wording", es)
		}
	}
}

// One instance's key serves every namespace whose local copy shares its
// directory: a row of its owner copied from one namespace into another
// (by anyone who can write both) is not its owner's in the other.
func TestSealBindsTheNamespace(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dsn, usage.Options{Namespace: "team_a", LocalDir: dir})
	t0 := time.Now().Add(-time.Minute)
	if err := a.Record(ctx, usage.Event{Request: "show git status", Tool: "git_status", OK: true, Principal: usage.Owner, Time: t0}); err != nil {
		t.Fatal(err)
	}
	b := open(t, dsn, usage.Options{Namespace: "team_b", LocalDir: dir})
	if err := b.Record(ctx, usage.Event{Request: "list the branches", Tool: "git_branch", OK: true, Principal: usage.Owner, Time: t0}); err != nil {
		t.Fatal(err)
	}
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT 'team_b', hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version + 10
		FROM toolsrv_usage_entries WHERE namespace = 'team_a'`,
		`UPDATE toolsrv_usage_ns SET version = version + 10, entries = entries + 1 WHERE namespace = 'team_b'`)
	es, _, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Key.Tool] = e.Key.Principal
	}
	id := b.(*store).in.id
	if got["git_branch"] != usage.Owner || got["git_status"] != usage.PrefixInstance+id+"/owner" {
		t.Errorf("in team_b, with team_a's owner row copied in: principals %v, want git_branch the owner's and git_status %s", got, usage.PrefixInstance+id+"/owner")
	}
}

// Another instance's rows are dated no earlier than when this instance
// first read them: a row written by hand with a first use a day before
// anything this instance knows (to be judged first, to vouch for its
// later entries) is read as first used when this instance first read
// it, whatever the row says later, through Snapshot and Changes alike,
// and across restarts (the local copy keeps it). This instance's own
// sealed entries keep their times.
func TestOthersRowsNotBackdated(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	clock := func() time.Time { return now }
	a := open(t, dsn, usage.Options{LocalDir: dir, Now: clock})
	t0 := now.Add(-2 * time.Hour)
	if err := a.Record(ctx, usage.Event{Request: "show git status", Tool: "git_status", OK: true, Principal: usage.Owner, Time: t0}); err != nil {
		t.Fatal(err)
	}
	forge := func(tool string, first time.Time) {
		t.Helper()
		k := usage.Key{Request: "show git status", Tool: tool, Principal: "made/up"}
		pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
			SELECT namespace, '\x`+hexOf(k.Hash())+`', norm, text, '`+tool+`', '', 'made/up', '', 5, 0, `+nanos(first)+`, `+nanos(first)+`, offered,
				(SELECT version + 1 FROM toolsrv_usage_ns n WHERE n.namespace = e.namespace)
			FROM toolsrv_usage_entries e WHERE tool = 'git_status'`, `UPDATE toolsrv_usage_ns SET version = version + 1, entries = entries + 1`)
	}
	firsts := func(es []usage.Entry) map[string]time.Time { // tool → first
		out := map[string]time.Time{}
		for _, e := range es {
			out[e.Key.Tool] = e.First
		}
		return out
	}
	snap := func(s usage.Store) map[string]time.Time {
		t.Helper()
		es, _, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return firsts(es)
	}
	day := now.Add(-24 * time.Hour)
	forge("fortune", day)
	read1 := now
	got := snap(a)
	if !got["git_status"].Equal(t0) || !got["fortune"].Equal(read1) {
		t.Fatalf("first read: git_status first %v (want %v, sealed), fortune first %v (want %v, when first read; the row says %v)",
			got["git_status"], t0, got["fortune"], read1, day)
	}
	// Later, the row changed (backdated further): still the first read.
	now = now.Add(time.Hour)
	pg.SQL(t, `UPDATE toolsrv_usage_entries SET first = first - 3600000000000, count = 6,
		version = (SELECT version + 1 FROM toolsrv_usage_ns n WHERE n.namespace = toolsrv_usage_entries.namespace) WHERE tool = 'fortune'`,
		`UPDATE toolsrv_usage_ns SET version = version + 1`)
	if got := snap(a); !got["fortune"].Equal(read1) {
		t.Errorf("the row read again: fortune first %v, want %v", got["fortune"], read1)
	}
	// Through Changes (a reader following the store).
	_, v, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read2 := now
	forge("weather", day)
	changed, _, _, err := a.Changes(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := firsts(changed); !got["weather"].Equal(read2) {
		t.Errorf("through Changes: weather first %v, want %v (the row says %v)", got["weather"], read2, day)
	}
	// Another process of this instance (its local copy), later.
	now = now.Add(time.Hour)
	a.Close()
	b := open(t, dsn, usage.Options{LocalDir: dir, Now: clock})
	if got := snap(b); !got["fortune"].Equal(read1) || !got["weather"].Equal(read2) || !got["git_status"].Equal(t0) {
		t.Errorf("after a restart: firsts %v, want fortune %v, weather %v, git_status %v", got, read1, read2, t0)
	}
}
