package index

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"testing"
	"time"
)

// weatherUses are n requests for the weather in cities from the from'th
// on, that principal answered with tool, first recorded at first.
func weatherUses(principal, tool string, first time.Time, from, n int) []Use {
	cities := []string{"paris", "rome", "berlin", "madrid", "lisbon", "vienna", "prague", "oslo", "dublin", "athens",
		"warsaw", "zurich", "geneva", "munich", "milan", "porto", "seville", "lyon", "nice", "bergen"}
	forms := []string{"weather in %s", "forecast for %s", "will it rain in %s", "temperature in %s tomorrow"}
	var out []Use
	for i := range n {
		r := fmt.Sprintf(forms[i%len(forms)], cities[(from+i)%len(cities)])
		out = append(out, Use{Request: r, Tool: tool, Principal: principal, Count: 3, First: first, ID: fmt.Sprint(principal, "/", tool, "/", r)})
	}
	return out
}

// voiceOf is the voice principal name speaks in, and its weight.
func voiceOf(u *usageView, name string) (voiceKind, float64, float32) {
	for p, n := range u.principals {
		if n == name {
			v := u.voice.of[p]
			return u.voice.kind[v], u.voice.weight[v], u.voice.belief[p]
		}
	}
	return 0, -1, -1
}

// Principals earn what they are heard at: two clients whose weather calls
// agree with the tools' texts and each other are established voices; 40
// new principals that each claim one weather request for send_email are
// one crowd that weighs a fraction of either, and the weather requests
// still go to get_weather, the crowd's tool with a tenth of the votes at
// most.
func TestUsageVoices(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	uses := append(weatherUses("mcp:a", "get_weather", long, 0, 16), weatherUses("9p:b", "get_weather", long, 8, 16)...)
	for k, u := range weatherUses("x", "send_email", time.Now(), 3, 40) {
		u.Principal, u.Count, u.ID = fmt.Sprint("9p:new", k), 1, fmt.Sprint("new", k)
		uses = append(uses, u)
	}
	ix, u := usageViewOf(t, uses)
	var established float64 = 1
	for _, p := range []string{"mcp:a", "9p:b"} {
		kind, w, b := voiceOf(u, p)
		if kind != voicePrincipal || w < usageEstablished || b < usageEstablished {
			t.Errorf("%s: voice %d, weight %.2f, belief %.2f; want an established voice", p, kind, w, b)
		}
		established = min(established, w)
	}
	kind, w, _ := voiceOf(u, "9p:new7")
	if kind != voiceCrowd || w > established/3 {
		t.Errorf("a new principal with a contradicted claim: voice %d, weight %.3f; want the crowd's, under a third of an established one's (%.2f)", kind, w, established)
	}
	for _, q := range []string{"weather in paris", "will it rain in oslo tonight", "forecast for nice"} {
		if got := top(t, ix, q); got[0] != "get_weather" {
			t.Errorf("%q: %v", q, got)
		}
		ev, _ := u.evidence(ix.usageQueryOf(context.Background(), u, q), nil, -1)
		if ev.p["send_email"] > 0.1*ev.p["get_weather"] {
			t.Errorf("%q: the crowd's send_email has %.3f of the votes, get_weather %.3f", q, ev.p["send_email"], ev.p["get_weather"])
		}
	}
}

// A crowd repeating an honest principal's requests does not change how
// much their words weigh (reweigh): the honest entries' words are as
// without it.
func TestUsageCrowdLeavesTheWordsAlone(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	honest := append(weatherUses("mcp:a", "get_weather", long, 0, 10), weatherUses("9p:b", "get_weather", long, 10, 10)...)
	_, alone := usageViewOf(t, honest)
	crowded := slices.Clone(honest)
	for k := range 60 {
		crowded = append(crowded, Use{Request: honest[k%10].Request, Tool: "send_email", Principal: fmt.Sprint("9p:new", k), Count: 1, ID: fmt.Sprint("n", k)})
	}
	_, u := usageViewOf(t, crowded)
	for term, id := range alone.dict {
		got := u.idf[u.dict[term]]
		if want := alone.idf[id]; math.Abs(got-want) > 0.35*want {
			t.Errorf("%q weighs %.3f with the crowd, %.3f without", term, got, want)
		}
	}
}

// A principal's burst of new claims that contradict what it has long
// said lose their votes (cross trust against its older entries); the
// same claims made long ago, with nothing older, keep theirs.
func TestUsageBurstAgainstOwnRecord(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	history := weatherUses("mcp:a", "get_weather", long, 0, 12)
	burst := []Use{}
	for k, r := range []string{"weather in paris today", "forecast for rome please", "will it rain in berlin now"} {
		burst = append(burst, Use{Request: r, Tool: "send_email", Principal: "mcp:a", Count: 1, First: time.Now(), ID: fmt.Sprint("b", k)})
	}
	_, u := usageViewOf(t, append(slices.Clone(history), burst...))
	for i := range u.n {
		if u.toolOf(int32(i)) == "send_email" && u.cross[i] > 0.2 {
			t.Errorf("%q → send_email, a new claim against the principal's record: cross trust %.3f, want ≤ 0.2", u.text[i], u.cross[i])
		}
		if u.toolOf(int32(i)) == "get_weather" && u.cross[i] != 1 {
			t.Errorf("%q → get_weather: cross trust %.3f, want 1", u.text[i], u.cross[i])
		}
	}
	// The same claims, recorded as long ago as the rest: nothing older
	// judges them.
	for k := range burst {
		burst[k].First = long
	}
	_, u = usageViewOf(t, append(slices.Clone(history), burst...))
	for i := range u.n {
		if u.toolOf(int32(i)) == "send_email" && u.cross[i] != 1 {
			t.Errorf("%q → send_email, as old as the rest: cross trust %.3f, want 1", u.text[i], u.cross[i])
		}
	}
}

// The owner's word: one call is no habit (nothing apart from the votes);
// five successful ones of a tool for a request raise it first for the
// request and rewordings, with the answerability, even when the votes
// get no weight (a history of one request cannot be checked by
// leave-one-out).
func TestUsageOwnerRepeats(t *testing.T) {
	if f := ownerFirmness(1); f != 0 {
		t.Errorf("ownerFirmness(1) = %v, want 0", f)
	}
	if f2, f5 := ownerFirmness(2), ownerFirmness(5); !(f2 > 0.3 && f2 < 0.5 && f5 > 0.8 && f5 < 0.9) {
		t.Errorf("ownerFirmness(2), (5) = %.3f, %.3f; want about 0.39, 0.86", f2, f5)
	}
	const req = "what does my horoscope say"
	for _, n := range []int{1, 5} {
		ix, u := usageViewOf(t, []Use{{Request: req, Tool: "translate_text", Principal: "owner", Role: RoleOwner, Count: n}})
		if u.w != 0 {
			t.Fatalf("one past request got weight %v", u.w)
		}
		for _, q := range []string{req, "what does my horoscope say today", "my horoscope?"} {
			r, err := ix.Rank(context.Background(), Query{Text: q, K: 5})
			if err != nil {
				t.Fatal(err)
			}
			first := r.Hits[0].Name == "translate_text"
			if first != (n == 5) {
				t.Errorf("%d call(s) for %q: %q ranks %v", n, req, q, r.Hits[:2])
			}
		}
	}
}

// The authors' examples (applyUsage's last step) raise their tool, but
// never past a supported tool that scored more before them: one whose text
// has a word of the message or a close meaning, or that the history
// raised. A tool only weakly like the message can be passed.
func TestUsageAuthorsBringInNotPushOut(t *testing.T) {
	a := 0.6
	r := Ranking{Answerable: &a, Hits: []Hit{
		{Name: "weak", Score: 0.3, Dense: 0.05},                          // no word, far meaning: not supported
		{Name: "text", Score: 0.2, Dense: 0.05, Lexical: 1, Words: true}, // a word of the message
		{Name: "tiny", Score: 0.01, Lexical: 1, Words: true},             // under the floor
		{Name: "mine", Score: 0.005},
	}}
	known := func(string) (bool, bool) { return true, true }
	applyUsage(&r, usageEvidence{author: map[string]float64{"mine": 1, "new": 0.5}}, 0, 0, known)
	var names []string
	score := map[string]float64{}
	for _, h := range r.Hits {
		names = append(names, h.Name)
		score[h.Name] = h.Score
	}
	if i, j := slices.Index(names, "mine"), slices.Index(names, "text"); i < 0 || i < j || score["mine"] >= score["text"] {
		t.Errorf("the examples' tool passed a supported one: %v %v", names, score)
	}
	if slices.Index(names, "mine") > slices.Index(names, "weak") && score["weak"] < score["text"] {
		t.Errorf("order %v", names)
	}
	if slices.Index(names, "new") < 0 || score["new"] >= score["text"] {
		t.Errorf("a tool the ranking lacked, brought in by its examples: %v %v", names, score)
	}
	if *r.Answerable <= a {
		t.Errorf("answerability %v, was %v: the examples should raise it", *r.Answerable, a)
	}
	// With nothing supported above it (the weak one only), an author's
	// tool may come first.
	r = Ranking{Hits: []Hit{{Name: "weak", Score: 0.3, Dense: 0.05}, {Name: "mine", Score: 0.1}}}
	applyUsage(&r, usageEvidence{author: map[string]float64{"mine": 1}}, 0, 0, known)
	if r.Hits[0].Name != "mine" {
		t.Errorf("over an unsupported tool alone: %+v", r.Hits)
	}
}

// The principals, their voices and the owner's and entries' first times
// survive the saved view.
func TestUsageViewSavedKeepsVoices(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	uses := append(weatherUses("mcp:a", "get_weather", long, 0, 10), Use{Request: "weather now", Tool: "send_email", Principal: "9p:x", Count: 1, ID: "x"},
		Use{Request: "horoscope", Tool: "translate_text", Principal: "owner", Role: RoleOwner, Count: 4, ID: "o"})
	_, u := usageViewOf(t, uses)
	var b bytesBuffer
	if err := encodeUsageView(&b, viewHeader{}, u); err != nil {
		t.Fatal(err)
	}
	got, _, err := decodeView(b.b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		got, was any
	}{
		{"roles", got.voice.role, u.voice.role}, {"beliefs", got.voice.belief, u.voice.belief}, {"voices", got.voice.of, u.voice.of},
		{"kinds", got.voice.kind, u.voice.kind}, {"weights", got.voice.weight, u.voice.weight}, {"cross", got.cross, u.cross},
		{"calls", got.calls, u.calls}, {"first", got.first, u.first}, {"apart", got.voice.apart, u.voice.apart},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.was) {
			t.Errorf("%s: %v after the round trip, was %v", c.name, c.got, c.was)
		}
	}
}

// bytesBuffer is an io.Writer of bytes.
type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// A delta that adds entries of judged principals sets their cross trust
// against the history as it is now, new entries among it (a serving
// process following a fleet's new calls: the cross trust of the entries
// before had no slot for the added ones, and reading it panicked).
func TestUsageDeltaAddsJudgedEntries(t *testing.T) {
	ctx := context.Background()
	long := time.Now().Add(-30 * 24 * time.Hour)
	uses := append(weatherUses("mcp:a", "get_weather", long, 0, 80), weatherUses("9p:b", "get_weather", long, 8, 80)...)
	for k, u := range weatherUses("x", "send_email", time.Now(), 3, 20) {
		u.Principal, u.Count, u.ID = fmt.Sprint("9p:new", k), 1, fmt.Sprint("new", k)
		uses = append(uses, u)
	}
	ix := usageIndex(t)
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 1, Load: func(context.Context) ([]Use, error) { return uses, nil }}); err != nil {
		t.Fatal(err)
	}
	if u := ix.usage.Load(); u == nil || u.cross == nil {
		t.Fatal("no cross trust to begin with: the test needs judged principals")
	}
	var added []Use
	for k, u := range weatherUses("y", "get_weather", time.Now(), 5, 8) {
		u.Principal, u.Count, u.ID = fmt.Sprint("9p:newer", k), 1, fmt.Sprint("newer", k)
		added = append(added, u)
	}
	all := append(slices.Clone(uses), added...)
	since := func(context.Context, int64) ([]Use, []string, error) { return added, nil, nil }
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Load: func(context.Context) ([]Use, error) { return all, nil }, Since: since}); err != nil {
		t.Fatal(err)
	}
	u := ix.usage.Load()
	if u == nil || u.drift == 0 || len(u.cross) != u.n {
		t.Fatalf("after the delta: %+v entries, drift %d, cross trust of %d (the test needs a delta, not a whole build)", u.n, u.drift, len(u.cross))
	}
	if got := top(t, ix, "weather in paris"); got[0] != "get_weather" {
		t.Errorf("weather in paris: %v", got)
	}
}

// The judging budget goes to the principals known longest first: 20 new
// principals with 17 claims each (more than the budget holds, each more
// entries than an honest one) do not leave the two established clients
// unjudged, and those of them the budget leaves unjudged are believed no
// more than a judged liar (usageUnjudged), not at the prior (usagePrior).
func TestUsageBudgetNotSpentByACrowd(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	uses := append(weatherUses("mcp:a", "get_weather", long, 0, 16), weatherUses("9p:b", "get_weather", long, 8, 16)...)
	for k := range 20 {
		for j, u := range weatherUses(fmt.Sprint("9p:new", k), "send_email", time.Now(), k, 17) {
			u.Count, u.ID = 1, fmt.Sprint("new", k, "/", j)
			uses = append(uses, u)
		}
	}
	ix, u := usageViewOf(t, uses)
	for _, p := range []string{"mcp:a", "9p:b"} {
		if kind, w, b := voiceOf(u, p); kind != voicePrincipal || b < usageEstablished {
			t.Errorf("%s: voice %d, weight %.2f, belief %.2f; want an established voice, judged before the crowd", p, kind, w, b)
		}
	}
	for p, name := range u.principals {
		if b := u.voice.belief[p]; u.voice.role[p] == RoleOther && name != "mcp:a" && name != "9p:b" && b > 0.9*usagePrior {
			t.Errorf("%s, a new principal's contradicted claims, judged or not: belief %.3f, want under the prior %.2f", name, b, usagePrior)
		}
	}
	for _, q := range []string{"weather in paris", "will it rain in oslo tonight", "forecast for nice"} {
		if got := top(t, ix, q); got[0] != "get_weather" {
			t.Errorf("%q: %v", q, got)
		}
	}
}

// The entries a principal is judged by are chosen by the installation's
// secret (History.Secret): a principal that knows the fixed choice (here,
// the order with no secret) makes the 16 entries it would be judged by
// agree and the other 64 lie, and is established without a secret; with
// one, its sample holds its lies too and it is not.
func TestUsageSampleKeyedBySecret(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	honest := weatherUses("mcp:a", "get_weather", long, 0, 16)
	cities := []string{"paris", "rome", "berlin", "madrid", "lisbon", "vienna", "prague", "oslo", "dublin", "athens",
		"warsaw", "zurich", "geneva", "munich", "milan", "porto", "seville", "lyon", "nice", "bergen"}
	forms := []string{"weather in %s", "forecast for %s", "will it rain in %s", "temperature in %s tomorrow"}
	var requests []string
	for k := range 80 {
		requests = append(requests, fmt.Sprintf(forms[(k/20+k)%4], cities[k%20]))
	}
	// The fixed order: what the attacker computes.
	fixed := func(r, tool string) uint32 {
		h := fnv.New32a()
		h.Write([]byte(r + "\x00" + tool))
		return h.Sum32()
	}
	// Each request's tool is chosen so that the 16 first in the fixed
	// order agree: sort by the key under the honest tool.
	slices.SortFunc(requests, func(a, b string) int { return cmp.Compare(fixed(a, "get_weather"), fixed(b, "get_weather")) })
	var evil []Use
	for k, r := range requests {
		tool := "send_email"
		if k < usageTrustSample {
			tool = "get_weather"
		}
		// The lies' keys under send_email must not come before the
		// truths' (they would be judged instead): drop those that do.
		if tool == "send_email" && fixed(r, tool) < fixed(requests[usageTrustSample-1], "get_weather") {
			continue
		}
		evil = append(evil, Use{Request: r, Tool: tool, Principal: "mcp:evil", Count: 2, First: long, ID: "evil/" + r})
	}
	if len(evil) < 3*usageTrustSample {
		t.Fatalf("only %d attacker entries: the test needs lies beyond the sample", len(evil))
	}
	uses := append(slices.Clone(honest), evil...)
	belief := func(secret []byte) float32 {
		t.Helper()
		ix := usageIndex(t)
		if _, err := ix.SetUsageSaved(context.Background(), History{Source: "s", Version: 1, Secret: secret,
			Load: func(context.Context) ([]Use, error) { return uses, nil }}); err != nil {
			t.Fatal(err)
		}
		_, _, b := voiceOf(ix.usage.Load(), "mcp:evil")
		return b
	}
	fixedB := belief(nil)
	if fixedB < usageEstablished {
		t.Fatalf("with the fixed choice, the attacker's belief is %.3f: the test needs it established (≥ %.2f)", fixedB, usageEstablished)
	}
	var sum float32
	secrets := []string{"installation one", "installation two", "installation three", "installation four", "installation five"}
	for _, secret := range secrets {
		b := belief([]byte(secret))
		if b > 0.6*fixedB {
			t.Errorf("with the secret %q, the attacker that made the fixed sample agree has belief %.3f, against %.3f with the fixed choice", secret, b, fixedB)
		}
		sum += b
	}
	if mean := sum / float32(len(secrets)); mean >= usageEstablished {
		t.Errorf("over %d secrets, the attacker's mean belief is %.3f, want under %.2f", len(secrets), mean, usageEstablished)
	}
}

// Newcomers that mostly tell the truth are not established in one build:
// 16 principals first seen an hour ago, each with 16 honest weather
// claims and 4 sending weather requests to send_email, stay in the crowd
// and do not outvote the two established clients on those requests. The
// same principals first recorded two days before the build are
// established voices (the rule is the age of their record here).
func TestUsageNewcomersWaitToBeEstablished(t *testing.T) {
	long := time.Now().Add(-30 * 24 * time.Hour)
	honest := append(weatherUses("mcp:a", "get_weather", long, 0, 16), weatherUses("9p:b", "get_weather", long, 8, 16)...)
	crowd := func(first time.Time) []Use {
		var out []Use
		for k := range 16 {
			p := fmt.Sprint("9p:new", k)
			for j, u := range weatherUses(p, "get_weather", first, k, 16) {
				u.Count, u.ID = 1, fmt.Sprint(p, "/", j)
				out = append(out, u)
			}
			for j, r := range []string{"weather in paris", "weather in paris today", "paris weather", "weather paris now"} {
				out = append(out, Use{Request: r, Tool: "send_email", Principal: p, Count: 1, First: first, ID: fmt.Sprint(p, "/lie", j)})
			}
		}
		return out
	}
	ix, u := usageViewOf(t, append(slices.Clone(honest), crowd(time.Now().Add(-time.Hour))...))
	for k := range 16 {
		if kind, w, b := voiceOf(u, fmt.Sprint("9p:new", k)); kind != voiceCrowd {
			t.Errorf("9p:new%d, first seen an hour ago: voice %d (weight %.2f, belief %.2f), want the crowd's", k, kind, w, b)
		}
	}
	for _, p := range []string{"mcp:a", "9p:b"} {
		if kind, _, b := voiceOf(u, p); kind != voicePrincipal {
			t.Errorf("%s: voice %d, belief %.2f; want established", p, kind, b)
		}
	}
	q := "weather in paris"
	if got := top(t, ix, q); got[0] != "get_weather" {
		t.Errorf("%q: %v, want get_weather first", q, got)
	}
	ev, _ := u.evidence(ix.usageQueryOf(context.Background(), u, q), nil, -1)
	if ev.p["send_email"] >= ev.p["get_weather"] {
		t.Errorf("%q: the newcomers' send_email has %.3f of the usage evidence, get_weather %.3f", q, ev.p["send_email"], ev.p["get_weather"])
	}
	_, u = usageViewOf(t, append(slices.Clone(honest), crowd(time.Now().Add(-48*time.Hour))...))
	if kind, w, b := voiceOf(u, "9p:new3"); kind != voicePrincipal {
		t.Errorf("9p:new3, first recorded two days ago: voice %d (weight %.2f, belief %.2f), want established", kind, w, b)
	}
}
