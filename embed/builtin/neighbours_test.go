package builtin

import (
	"math/rand/v2"
	"testing"
)

func TestNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tb := randomTable(rng, 32, []string{"file", "document", "archiv", "weather", "forecast", "zip"}, 0)
	row := func(s string) []float32 {
		for i, v := range tb.Vocab {
			if v == s {
				return tb.Row(i)
			}
		}
		t.Fatalf("no row %q", s)
		return nil
	}
	// "document" is 2×"file" plus a little noise (cosine ≈ 1); "forecast"
	// is −"file" (cosine −1); "zip" is "file" + "weather" (cosine ≈ 0.7).
	f, d, fc, z, w := row("file"), row("document"), row("forecast"), row("zip"), row("weather")
	for i := range f {
		f[i] = float32(rng.NormFloat64())
		w[i] = float32(rng.NormFloat64())
	}
	for i := range f {
		d[i] = 2*f[i] + 0.01*float32(rng.NormFloat64())
		fc[i] = -f[i]
		z[i] = f[i] + w[i]
	}
	e, err := FromTable(tb, Options{ID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// "archiv" is row 0 (all zero) and "weather" is not a candidate;
	// "nosuch" is outside the vocabulary and must be ignored.
	ns := e.NeighbourSet([]string{"file", "document", "forecast", "zip", "zip", "archiv", "nosuch"})
	if ns.Len() != 5 {
		t.Fatalf("Len = %d, want 5 (vocabulary candidates, deduplicated)", ns.Len())
	}
	got := ns.Neighbours("file", 3)
	if len(got) != 3 || got[0].Term != "document" || got[1].Term != "zip" {
		t.Fatalf("Neighbours(file, 3) = %v, want document, zip first", got)
	}
	if got[0].Cos < 0.99 || got[1].Cos < 0.5 || got[1].Cos > 0.9 {
		t.Fatalf("cosines %v out of range", got)
	}
	for _, n := range got {
		if n.Term == "file" || n.Term == "weather" || n.Term == "forecast" {
			t.Fatalf("Neighbours(file) = %v: includes itself, a non-candidate or the opposite row", got)
		}
	}
	all := ns.Neighbours("file", 10)
	if len(all) != 4 || all[3].Term != "forecast" || all[3].Cos > -0.99 {
		t.Fatalf("Neighbours(file, 10) = %v, want 4 candidates ending with forecast at −1", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Cos > all[i-1].Cos {
			t.Fatalf("not sorted: %v", all)
		}
	}
	// A non-candidate vocabulary term still has neighbours among candidates.
	if nw := ns.Neighbours("weather", 1); len(nw) != 1 || nw[0].Term != "zip" {
		t.Fatalf("Neighbours(weather, 1) = %v, want zip", nw)
	}
	if n := ns.Neighbours("nosuch", 3); n != nil {
		t.Fatalf("unknown term has neighbours %v", n)
	}
	if n := ns.Neighbours("file", 0); n != nil {
		t.Fatalf("k=0 gave %v", n)
	}
}
