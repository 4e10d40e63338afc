package embedding

import (
	"math"
	"strings"
	"testing"
)

func TestReadWinkJSONAndByTerm(t *testing.T) {
	wv, err := LoadWinkJSON("testdata/glove/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if wv.Dim != 3 || len(wv.Words) != 6 || wv.Vecs[2][1] != 0.9 {
		t.Fatalf("read %d-dim %d words, run=%v", wv.Dim, len(wv.Words), wv.Vecs[2])
	}
	by := wv.ByTerm()
	if _, ok := by["the"]; ok {
		t.Error(`stopword "the" became a term`)
	}
	run, ok := by["run"]
	if !ok {
		t.Fatalf("no term run in %v", by)
	}
	// running (rank 1), run (rank 2) and runs (rank 3) share the stem; the
	// most frequent word weighs most and gives the rank.
	if run.Rank != 1 {
		t.Errorf("run rank %d, want 1 (from running)", run.Rank)
	}
	var n float64
	for _, x := range run.Vec {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("term vector not unit: |v|² = %v", n)
	}
	if !(run.Vec[1] > run.Vec[2]) {
		t.Errorf("run = %v: want dominated by running (dim 1) over runs (dim 2)", run.Vec)
	}
}

func TestReadWinkJSONRejectsOtherJSON(t *testing.T) {
	if _, err := ReadWinkJSON(strings.NewReader(`{"a":1}`)); err == nil || !strings.Contains(err.Error(), "wink-embeddings") {
		t.Fatalf("err = %v, want a hint at the expected file", err)
	}
}

func TestInitFromAndNeighbourPairs(t *testing.T) {
	wv, err := LoadWinkJSON("testdata/glove/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	pre := wv.ByTerm()
	v := BuildVocab([][]string{{"cat", "kitten", "run", "zebra"}}, 1, 10, 0, 0, 0)
	const dim = 5
	E := make([]float32, v.Rows()*dim)
	for i := range E {
		E[i] = 1
	}
	if n := InitFrom(E, dim, v.Terms, pre, 0.5); n != 3 {
		t.Fatalf("InitFrom set %d rows, want 3 (zebra has no vector)", n)
	}
	cat := v.index["cat"]
	row := E[int(cat)*dim : int(cat+1)*dim]
	if got, want := row[2], 0.5*pre["cat"].Vec[2]; math.Abs(float64(got-want)) > 1e-6 {
		t.Errorf("cat row[2] = %v, want %v", got, want)
	}
	if row[4] != 0.5 {
		t.Errorf("cat row[4] = %v, want the random part scaled by 0.5", row[4])
	}
	zebra := v.index["zebra"]
	if E[int(zebra)*dim] != 1 {
		t.Error("zebra's row changed")
	}
	ps, err := neighbourPairs(v, pre, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d pairs, want 3", len(ps))
	}
	for _, p := range ps {
		if p.q[0].row == cat && p.d[0].row != v.index["kitten"] {
			t.Errorf("cat's nearest is %s, want kitten", v.Terms[p.d[0].row])
		}
		if p.q[0].row == p.d[0].row {
			t.Error("a term is its own neighbour")
		}
	}
}
