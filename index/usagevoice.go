package index

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/internal/parallel"
)

// Whose word counts. Every entry of the history has a principal, who
// recorded it (the owner at the terminal, an MCP client, a 9P agent, an
// imported file, another instance of a shared store, a tool's author),
// and the history is heard by principal, each as far as it has earned:
//
//   - The owner is believed (belief 1). Beyond its vote, the owner's word
//     counts on its own: a tool the owner called successfully, again and
//     again, for requests like a message is raised for it, and the
//     answerability with it, by ownerFirmness (applyUsage).
//   - A tool's author speaks through its examples, apart from the votes:
//     they can raise their tool, never past a tool its own text and the
//     history support (applyUsage), whatever weight the history gets.
//   - Any other principal starts low (usagePrior) and earns belief as its
//     calls succeed and agree with the tools' own texts and with the
//     others (hear): belief = (usagePriorN·usagePrior + Σ agreement) /
//     (usagePriorN + judged entries) × its calls' success rate, over a
//     sample of its entries (usageTrustSample each, usageTrustRanks in
//     all). An entry agrees with the texts when its tool is among the
//     best of the ranking of its request without the history; with the
//     others when the other principals near its request, each as far as
//     believed, name its tool; and it is contradicted as far as they name
//     another. Agreement among newcomers is worth what their belief is,
//     little: a crowd cannot vouch for itself.
//   - Voices: the owner's; each established principal's (at least
//     usageEstablishN entries and belief usageEstablished, and a record
//     here of at least usageEstablishAge: its first entry recorded that
//     long before the build) with its belief as weight; and one voice for
//     all the others, the crowd,
//     whose weight is what its entries together earn (belief of them
//     pooled), not their count. Principals first seen by a delta since
//     the last whole build speak as the late voice, at usageUnjudged.
//   - The judging budget goes to the principals this installation has
//     known longest first (then those with the most entries); one it
//     leaves unjudged, or with nothing to judge, is believed as a judged
//     liar is (usageUnjudged), in its belief and in the crowd's pooled
//     one: a crowd of new principals gains nothing by outnumbering it.
//   - A voice's share of the votes counts by its weight over the weights
//     of all voices heard near the message, or 1 if they add up to less:
//     a voice alone is heard at its weight, not at full strength.
//   - An entry other principals contradict (cross trust, usagetrust.go)
//     loses its vote in proportion, so that no principal and no crowd can
//     move a request that the believed principals answer consistently.
//
// The constants were chosen on histories simulated from the training
// sources (bench/scripts/usage-check.py's protocol on the catalogs "learn
// export" writes from train/data, with the attacks of the tests added),
// see bench/RESULTS.md, "Usage history".

// Role is what a principal's word is to the ranking.
type Role uint8

const (
	// RoleOther: its word counts as far as it has earned.
	RoleOther Role = iota
	// RoleOwner: the owner at the terminal: believed.
	RoleOwner
	// RoleAuthor: a tool's author, through its examples: they can bring
	// the tool in, not push another out.
	RoleAuthor
)

// The principal model's constants (see above).
const (
	usagePrior       = 0.1
	usagePriorN      = 4.0
	usageEstablishN  = 8
	usageEstablished = 0.3
	// usageEstablishAge is how long before a whole build a principal's
	// first entry must have been recorded (as this installation recorded
	// it: an import's lines as of the import, another instance's rows as
	// first read) for it to be an established voice: newcomers that tell
	// the truth mostly, and lie where it matters, earn belief in one build
	// but speak in the crowd until then, so that no crowd made at once
	// outvotes the established principals.
	usageEstablishAge = 24 * time.Hour
	usageTrustSample  = 16
	usageTrustRanks   = 256
	// usageUnjudged is the belief of a principal not judged (the budget
	// spent, or first seen since the last whole build): a judged liar's,
	// a full sample none of which agreed.
	usageUnjudged = usagePriorN * usagePrior / (usagePriorN + usageTrustSample)
	// usageHeard is the least weight of a voice whose requests
	// leave-one-out samples (usagefit.go).
	usageHeard = 0.05
	// usageCrossK: an entry the believed others contradict fully keeps
	// usageCrossK/(1+usageCrossK) of its vote (usagetrust.go).
	usageCrossK = 0.05
	// usageOwnerNear: the owner's calls of entries at least this near a
	// message (a kernel of similarity 0.5) count as calls for requests
	// like it; usageOwnerN: ownerFirmness's scale.
	usageOwnerNear = 0.006737946999085467 // exp(usageBeta·(0.5−1))
	usageOwnerN    = 2.0
	// usageAuthorW is the authors' examples' weight; usageSupportFloor
	// and usageSupportDense which tools examples cannot lift another past
	// (supported): the shipped thresholds' min (0.01 since the retrain of
	// the number classes; a tool the thresholds may offer is one the
	// examples must not push out), and a dense score above the weak
	// likeness of unrelated texts (0.05–0.08 on the example tools).
	usageAuthorW      = 0.5
	usageSupportFloor = 0.01
	usageSupportDense = 0.1
)

// ownerFirmness is how firmly the owner's n successful calls of a tool for
// requests like a message say it: 0 for one call (one try is no habit),
// 1 − e^(−(n−1)/usageOwnerN) for more: 0.39 for 2, 0.86 for 5.
func ownerFirmness(n float64) float64 {
	if n <= 1 {
		return 0
	}
	return 1 - math.Exp(-(n-1)/usageOwnerN)
}

// voiceKind is what a voice is.
type voiceKind uint8

const (
	voiceOwner voiceKind = iota
	voicePrincipal
	voiceCrowd
	voiceAuthor
	voiceLate
)

// voiceGroups are the groups of voices that have candidate slots of
// their own (candidates): the owner's, the established principals', the
// others' (the crowd, the late), the authors'.
const voiceGroups = 4

// voiceGroup is the group of entry i's voice.
func (u *usageView) voiceGroup(i int32) int {
	v := &u.voice
	if len(v.of) == 0 {
		return 2
	}
	switch v.kind[v.of[u.principal[i]]] {
	case voiceOwner:
		return 0
	case voicePrincipal:
		return 1
	case voiceAuthor:
		return 3
	}
	return 2
}

// voices is how a view's principals are heard.
type voices struct {
	// Per principal: its role, belief (what its record earned, 1 for the
	// owner), entries and voice.
	role    []Role
	belief  []float32
	entries []int32
	of      []int32
	// Per voice: its kind and weight.
	kind   []voiceKind
	weight []float64
	// crowd and late are those voices (-1: none yet); apart: the owner or
	// an author speaks (applyUsage's steps of their own).
	crowd, late int32
	apart       bool
}

// speaks reports whether the view moves a ranking at all: its votes
// have a weight, or the owner or an author speaks.
func (u *usageView) speaks() bool { return u.w > 0 || u.voice.apart }

// principalStats are a principal's calls in the history as given (all its
// entries, those that do not vote too).
type principalStats struct {
	calls, ok int64
	role      Role
}

// success is the share of p's calls that succeeded, with one success
// assumed (a principal with a few calls, all failed, gets little).
func (s principalStats) success() float64 {
	return float64(s.ok+1) / float64(s.calls+1)
}

// hear sets the principals' belief and voices (see the file comment):
// the owner and the authors are voices of their own; the others are
// judged, over samples of their entries, first by the tools' texts, then
// by the texts and one another (one round: a principal's belief from the
// texts alone, then with the others as believed by it). stats are the
// principals' calls. It ranks each judged request once (without the
// history), at most usageTrustRanks in all.
func (ix *Index) hear(ctx context.Context, u *usageView, stats []principalStats) error {
	np := u.nprincipals
	v := &u.voice
	// The samples: each judged principal's entries with a tool, in a
	// fixed order, the principals this installation has known longest
	// first (the seniority of their first entry, as recorded here), then
	// those with the most entries: a crowd of new principals cannot use
	// the budget up before the established ones are judged.
	var judged []int32
	for p := range np {
		if v.role[p] == RoleOther {
			judged = append(judged, int32(p))
			v.belief[p] = usagePrior
		} else {
			v.belief[p] = 1
		}
	}
	if len(judged) == 0 {
		u.voicesOf(nil, nil)
		return nil
	}
	since := make([]int64, np)
	for p := range since {
		since[p] = math.MaxInt64
	}
	byP := make([][]int32, np)
	for i := 0; i < u.n; i++ {
		p := u.principal[i]
		if f := u.first[i]; f > 0 {
			since[p] = min(since[p], f)
		}
		if v.role[p] == RoleOther && u.toolOf(int32(i)) != "" {
			byP[p] = append(byP[p], int32(i))
		}
	}
	// Too new to be established: first recorded less than
	// usageEstablishAge before now (a principal none of whose entries has
	// a time, a history given without them, is not held back: the stores
	// time every entry).
	young := make([]bool, np)
	recent := time.Now().Add(-usageEstablishAge).Unix()
	for p := range young {
		young[p] = since[p] != math.MaxInt64 && since[p] > recent
	}
	slices.SortStableFunc(judged, func(a, b int32) int {
		if c := cmp.Compare(since[a], since[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(v.entries[b], v.entries[a]); c != 0 {
			return c
		}
		return strings.Compare(u.principals[a], u.principals[b])
	})
	// Which entries judge a principal: an order keyed by the
	// installation's secret, which no principal can read, so that none
	// can tell which of its claims will be checked and make those agree.
	secret := ix.usage.secret
	key := func(i int32) uint64 {
		if secret != nil {
			h := hmac.New(sha256.New, secret)
			h.Write([]byte(u.text[i]))
			h.Write([]byte{0})
			h.Write([]byte(u.toolOf(i)))
			return binary.LittleEndian.Uint64(h.Sum(nil))
		}
		h := fnv.New32a()
		h.Write([]byte(u.text[i]))
		h.Write([]byte{0})
		h.Write([]byte(u.toolOf(i)))
		return uint64(h.Sum32())
	}
	var sample []int32
	budget := usageTrustRanks
	for _, p := range judged {
		es := byP[p]
		if len(es) > min(usageTrustSample, budget) {
			keys := make(map[int32]uint64, len(es))
			for _, i := range es {
				keys[i] = key(i)
			}
			slices.SortStableFunc(es, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) })
		}
		n := min(len(es), usageTrustSample, budget)
		byP[p] = es[:n]
		sample = append(sample, es[:n]...)
		budget -= n
	}
	// Agreement with the texts: the tool among the best of its request's
	// ranking without the history (the cut of leave-one-out).
	ix.mu.RLock()
	cut := min(5, max(1, len(ix.v.byName)/10))
	ix.mu.RUnlock()
	text := make([]float64, u.n)
	errs := make([]error, len(sample))
	parallel.Each(len(sample), func(j int) {
		i := sample[j]
		if errs[j] = ctx.Err(); errs[j] != nil {
			return
		}
		r, err := ix.Rank(ctx, Query{Text: u.text[i], K: cut, NoUsage: true})
		if err != nil {
			errs[j] = err
			return
		}
		for k := 0; k < len(r.Hits) && k < cut; k++ {
			if r.Hits[k].Name == u.toolOf(i) {
				text[i] = 1
				break
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A principal the budget left unjudged (or with nothing to judge: no
	// entry with a tool) counts as judged on a full sample that all
	// disagreed: it gets what a judged liar gets, never more, in its
	// belief and in the crowd's pooled one.
	samples := func(p int32) float64 {
		if len(byP[p]) == 0 {
			return usageTrustSample
		}
		return float64(len(byP[p]))
	}
	believe := func(agree func(i int32) float64) {
		for _, p := range judged {
			var sum float64
			for _, i := range byP[p] {
				sum += agree(i)
			}
			n := samples(p)
			b := (usagePriorN*usagePrior + sum) / (usagePriorN + n) * stats[p].success()
			v.belief[p] = float32(min(1, b))
		}
		u.voicesOf(func(members []int32) float64 {
			var sum, n float64
			var ok, calls int64
			for _, p := range members {
				for _, i := range byP[p] {
					sum += agree(i)
				}
				n += samples(p)
				ok, calls = ok+stats[p].ok, calls+stats[p].calls
			}
			s := principalStats{ok: ok, calls: calls}
			return (usagePriorN*usagePrior + sum) / (usagePriorN + n) * s.success()
		}, young)
	}
	believe(func(i int32) float64 { return text[i] })
	// With the others, as believed so far: an entry agrees as far as
	// they name its tool, or its text does, and is contradicted as far
	// as they name another.
	agree := make([]float64, u.n)
	parallel.Each(len(sample), func(j int) {
		i := sample[j]
		own, best := u.others(i)
		agree[i] = max(0, min(1, max(text[i], own)-max(0, best-own)))
	})
	believe(func(i int32) float64 { return agree[i] })
	return nil
}

// initVoices sets u's principals' roles (from stats) and entries, each
// believed as its role starts (1 for the owner and the authors,
// usagePrior for the others), and their voices as they stand then.
func (u *usageView) initVoices(stats []principalStats) {
	np := u.nprincipals
	v := &u.voice
	v.role = make([]Role, np)
	v.belief = make([]float32, np)
	v.entries = make([]int32, np)
	for p := range np {
		v.role[p] = stats[p].role
		v.belief[p] = 1
		if v.role[p] == RoleOther {
			v.belief[p] = usagePrior
		}
	}
	for i := 0; i < u.n; i++ {
		v.entries[u.principal[i]]++
	}
	u.voicesOf(nil, nil)
}

// others is what the principals other than entry i's say of its request,
// each voice as far as it is heard (weighed, each vote by its entry's
// trust within its principal): the share of i's tool, and the largest
// share of another tool ("none" among them).
func (u *usageView) others(i int32) (own, best float64) { return u.othersThan(i, 0, 0) }

// othersThan is others, with the entries of i's own principal first
// recorded before older (Unix seconds; 0: none) among the others, heard
// beside judge (voting.judge; 0: over at least 1).
func (u *usageView) othersThan(i int32, older int64, judge float64) (own, best float64) {
	sc := u.getScratch()
	defer u.putScratch(sc)
	o := voting{trusted: true, weighed: true, only: -1, except: u.principal[i], olderThan: older, judge: judge}
	if !u.vote(u.entryQuery(i), nil, leftOut{entry: i}, o, usageTrustCommon, sc) {
		return 0, 0
	}
	mine := u.toolID[i]
	for _, t := range sc.tools {
		if t == mine {
			own = sc.toolP[t]
		} else {
			best = max(best, sc.toolP[t])
		}
	}
	return own, best
}

// voicesOf sets the voices of u's principals from their roles and
// beliefs: the owner's, each established principal's (but those young
// says are too new: nil, none), the authors', and the crowd of the
// others, weighed by crowd (its members' pooled belief; nil: usagePrior).
func (u *usageView) voicesOf(crowd func(members []int32) float64, young []bool) {
	v := &u.voice
	np := u.nprincipals
	v.of = make([]int32, np)
	v.kind, v.weight = v.kind[:0], v.weight[:0]
	v.crowd, v.late = -1, -1
	owner, author := int32(-1), int32(-1)
	add := func(k voiceKind, w float64) int32 {
		v.kind = append(v.kind, k)
		v.weight = append(v.weight, w)
		return int32(len(v.kind) - 1)
	}
	var members []int32
	for p := range np {
		switch {
		case v.role[p] == RoleOwner:
			if owner < 0 {
				owner = add(voiceOwner, 1)
			}
			v.of[p] = owner
		case v.role[p] == RoleAuthor:
			if author < 0 {
				author = add(voiceAuthor, 0)
			}
			v.of[p] = author
		case v.entries[p] >= usageEstablishN && v.belief[p] >= usageEstablished && (young == nil || !young[p]):
			v.of[p] = add(voicePrincipal, float64(v.belief[p]))
		default:
			members = append(members, int32(p))
		}
	}
	v.apart = owner >= 0 || author >= 0
	if len(members) > 0 {
		w := usagePrior
		if crowd != nil {
			w = crowd(members)
		}
		v.crowd = add(voiceCrowd, min(1, w))
		for _, p := range members {
			v.of[p] = v.crowd
		}
	}
}

// join gives a principal first seen by a delta of role r its voice: the
// owner's or the authors' (made if there is none), else the late voice,
// at usageUnjudged (what a judged liar gets), until the next whole build
// judges it.
func (v *voices) join(r Role) {
	kind, w := voiceLate, usageUnjudged
	switch r {
	case RoleOwner:
		kind, w = voiceOwner, 1
	case RoleAuthor:
		kind, w = voiceAuthor, 0
	}
	voice := int32(-1)
	for k, vk := range v.kind {
		if vk == kind {
			voice = int32(k)
			break
		}
	}
	if voice < 0 {
		v.kind = append(v.kind, kind)
		v.weight = append(v.weight, w)
		voice = int32(len(v.kind) - 1)
		if kind == voiceLate {
			v.late = voice
		}
	}
	belief := float32(usageUnjudged)
	if r != RoleOther {
		belief = 1
		v.apart = true
	}
	v.role = append(v.role, r)
	v.belief = append(v.belief, belief)
	v.entries = append(v.entries, 0)
	v.of = append(v.of, voice)
}

// clone is a copy of v a delta may change.
func (v voices) clone() voices {
	return voices{role: slices.Clone(v.role), belief: slices.Clone(v.belief), entries: slices.Clone(v.entries), of: slices.Clone(v.of),
		kind: slices.Clone(v.kind), weight: slices.Clone(v.weight), crowd: v.crowd, late: v.late, apart: v.apart}
}

// PrincipalTrust is how the ranking hears one principal of the usage
// history in effect.
type PrincipalTrust struct {
	// Principal is its name (a unit: the usage package's Unit), Role
	// "owner", "author" or "other".
	Principal string `json:"principal"`
	Role      string `json:"role"`
	// Belief is what its record earned (1 for the owner and the authors;
	// the others', see usagevoice.go).
	Belief float64 `json:"belief"`
	// Voice is the voice it speaks in: "owner", "authors" (their own
	// step), "own" (an established principal's), "crowd" (with every
	// principal not established), "late" (first seen since the last
	// whole build); Weight that voice's weight.
	Voice  string  `json:"voice"`
	Weight float64 `json:"weight"`
	// Entries are its entries in the ranking's view (failed-only ones
	// are not: they never vote).
	Entries int `json:"entries"`
}

// UsagePrincipals says how the history in effect hears each of its
// principals, in name order (nil: no history).
func (ix *Index) UsagePrincipals() []PrincipalTrust {
	u := ix.usage.Load()
	if u == nil {
		return nil
	}
	v := &u.voice
	roles := [...]string{RoleOther: "other", RoleOwner: "owner", RoleAuthor: "author"}
	kinds := [...]string{voiceOwner: "owner", voicePrincipal: "own", voiceCrowd: "crowd", voiceAuthor: "authors", voiceLate: "late"}
	out := make([]PrincipalTrust, 0, u.nprincipals)
	for p := range u.nprincipals {
		voice := v.of[p]
		out = append(out, PrincipalTrust{Principal: u.principals[p], Role: roles[v.role[p]], Belief: float64(v.belief[p]),
			Voice: kinds[v.kind[voice]], Weight: v.weight[voice], Entries: int(v.entries[p])})
	}
	slices.SortFunc(out, func(a, b PrincipalTrust) int { return strings.Compare(a.Principal, b.Principal) })
	return out
}

// reweigh sets u's word weights again with each entry's words counted by
// its voice's weight (the owner's, and the authors', in full): the
// document frequency of a word is the weight of the voices whose requests
// have it, at least 1, over the weight of all. With every entry counted
// alike, a crowd repeating the honest requests (or adding words of its
// own) would change how much each word of theirs weighs, and so what is
// near what for everyone. Nothing to do when every voice is heard in
// full.
func (u *usageView) reweigh() {
	v := &u.voice
	w := make([]float64, len(v.kind))
	full := true
	for k, kind := range v.kind {
		w[k] = v.weight[k]
		if kind == voiceOwner || kind == voiceAuthor {
			w[k] = 1
		}
		full = full && w[k] == 1
	}
	if full {
		return
	}
	df := make([]float64, len(u.idf))
	total := 0.0
	for i := 0; i < u.n; i++ {
		wi := w[v.of[u.principal[i]]]
		total += wi
		for _, tw := range u.row(int32(i)) {
			df[tw.id] += wi
		}
	}
	total = max(total, 1)
	for id := range u.idf {
		u.idf[id] = math.Log(1 + total/max(df[id], 1))
	}
	for i := 0; i < u.n; i++ {
		row := u.row(int32(i))
		var norm float64
		for _, tw := range row {
			norm += u.idf[tw.id] * u.idf[tw.id]
		}
		norm = math.Sqrt(norm)
		for k := range row {
			row[k].w = float32(u.idf[row[k].id] / norm)
		}
	}
	u.reindex()
}
