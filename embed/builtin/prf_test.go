package builtin

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"
)

var prfDocs = []string{
	"get weather: returns the weather forecast for a city\nArguments: city (name of the city)",
	"send email: sends an email message to a recipient\nArguments: to (address); body (text)",
	"convert currency: converts an amount between currencies\nArguments: amount; from; to",
	"get stock price: returns the current price of a stock\nArguments: ticker (stock symbol)",
	"read file: reads a file from disk and returns its text",
}

// TestPRFRestoreReproducesFit checks, for each feedback mode, that feedback
// is deterministic, changes the query vector, keeps it unit length, and that
// Restore of the state embeds exactly as the fit did.
func TestPRFRestoreReproducesFit(t *testing.T) {
	ctx := context.Background()
	base, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := base.Fit(ctx, prfDocs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(plain.State(), []byte(stateMagic)) {
		t.Fatal("the default fit must keep the TSFIT001 state (IDs and caches unchanged)")
	}
	const query = "weather forecast for Paris tomorrow"
	q0, _ := plain.EmbedQuery(ctx, query)
	for _, tc := range []struct {
		name string
		mode int
	}{{"term", PRFTerm}, {"exact", PRFExact}} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.ID = "builtin/test"
			o.PRF, o.PRFBeta, o.PRFK, o.PRFMaxDocs, o.PRFPower = tc.mode, 0.3, 2, 100, 1
			e, err := FromTable(base.Table(), o)
			if err != nil {
				t.Fatal(err)
			}
			f, err := e.Fit(ctx, prfDocs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(f.State(), []byte(statePRFMagic)) {
				t.Fatalf("state starts %q, want %q", f.State()[:8], statePRFMagic)
			}
			q1, _ := f.EmbedQuery(ctx, query)
			q2, _ := f.EmbedQuery(ctx, query)
			if !slices.Equal(q1, q2) {
				t.Error("the same query embeds differently twice")
			}
			if slices.Equal(q1, q0) {
				t.Error("feedback left the query vector unchanged")
			}
			var n float64
			for _, x := range q1 {
				n += float64(x) * float64(x)
			}
			if math.Abs(n-1) > 1e-4 {
				t.Errorf("|q|² = %v, want 1", n)
			}
			r, err := e.Restore(f.State())
			if err != nil {
				t.Fatal(err)
			}
			if r.ID() != f.ID() {
				t.Errorf("restored ID %q, fitted %q", r.ID(), f.ID())
			}
			q3, _ := r.EmbedQuery(ctx, query)
			if !slices.Equal(q1, q3) {
				t.Error("the restored embedder embeds the query differently")
			}
			st := f.State()
			for _, bad := range [][]byte{st[:len(st)-1], st[:len(st)-300], append(slices.Clone(st), 0)} {
				if _, err := e.Restore(bad); err == nil {
					t.Errorf("Restore accepted a damaged state of %d bytes", len(bad))
				}
			}
		})
	}
}

// TestPRFExactCap checks that exact feedback is skipped above PRFMaxDocs.
func TestPRFExactCap(t *testing.T) {
	ctx := context.Background()
	base, err := New()
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.ID = "builtin/test"
	o.PRF, o.PRFBeta, o.PRFK, o.PRFMaxDocs = PRFExact, 0.3, 2, len(prfDocs)-1
	e, err := FromTable(base.Table(), o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Fit(ctx, prfDocs)
	if err != nil {
		t.Fatal(err)
	}
	if f.(*Fitted).prf != nil || !bytes.HasPrefix(f.State(), []byte(stateMagic)) {
		t.Error("exact feedback was built for a catalog above PRFMaxDocs")
	}
}

// TestHeadMix checks the first-line blend of document vectors.
func TestHeadMix(t *testing.T) {
	ctx := context.Background()
	base, err := New()
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.ID = "builtin/test"
	o.HeadMix = 0.3
	e, err := FromTable(base.Table(), o)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := base.EmbedDocuments(ctx, prfDocs)
	mixed, _ := e.EmbedDocuments(ctx, prfDocs)
	again, _ := e.EmbedDocuments(ctx, prfDocs)
	for i := range prfDocs {
		if !slices.Equal(mixed[i], again[i]) {
			t.Errorf("doc %d: not deterministic", i)
		}
		hasHead := bytes.IndexByte([]byte(prfDocs[i]), '\n') > 0
		if same := slices.Equal(plain[i], mixed[i]); same == hasHead {
			t.Errorf("doc %d: blended=%v, has a first line=%v", i, !same, hasHead)
		}
		var n float64
		for _, x := range mixed[i] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 {
			t.Errorf("doc %d: |d|² = %v", i, n)
		}
	}
}
