package plot

import (
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Series adds one line and one set of points, in the series' color, and
// names them once in the legend; a series without points is an error.
func TestSeries(t *testing.T) {
	p := plot.New()
	if err := Series(p, "a", plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}}, 5, 0); err != nil {
		t.Fatal(err)
	}
	if Color(5) != Color(1) || Color(0) == Color(1) {
		t.Error("the palette does not repeat after four colors")
	}
	if err := Series(p, "empty", nil, 0, 0); err == nil {
		t.Error("a series without points was drawn")
	}
}
