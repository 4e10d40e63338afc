package plot

import (
	"bytes"
	"fmt"
	"image/png"
	"testing"

	"github.com/toolsrv/toolsrv/bench/tune"
	"github.com/toolsrv/toolsrv/thresholds"
)

func TestPlotTuneWritesAPNG(t *testing.T) {
	var qs []tune.Query
	for i := 0; i < 50; i++ {
		qs = append(qs, tune.Query{Corpus: "x", ID: fmt.Sprint(i), Relevant: []string{"a"}, Abstain: i%5 == 0,
			Hits: []thresholds.Candidate{{Name: "a", Score: float64(i%10) / 10}, {Name: "b", Score: 0.05}}})
	}
	g := tune.DefaultGrid()
	res := tune.Sweep(qs, g, tune.Objective{MaxOffered: 3, MinAbstain: 0.5}, nil)
	var buf bytes.Buffer
	if err := Tune(&buf, res, "test sweep"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 600 {
		t.Fatalf("image is %v, too small to read", b)
	}
}
