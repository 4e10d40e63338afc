// Command usageplot draws what the usage history is worth as a PNG:
// macro Recall@5 against the past requests per tool (0 = no history), with
// correct calls and with 30% credited to a wrong tool. Used for the
// repository's picture:
//
//	bench/scripts/usage-check.py bin/toolsrv EVAL /tmp/u --curve /tmp/usage-curve.json
//	go run ./bench/cmd/usageplot /tmp/usage-curve.json bench/usage-curve.png
package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	bplot "github.com/toolsrv/toolsrv/bench/plot"
)

// curve is what usage-check.py --curve writes: one point per label.
type curve struct {
	Title  string   `json:"title"`
	Labels []string `json:"labels"`
	Base   float64  `json:"base"`
	Series []struct {
		Name   string    `json:"name"`
		Points []float64 `json:"points"`
	} `json:"series"`
}

func main() {
	bplot.Main("usageplot", "CURVE.json OUT.png (CURVE.json from bench/scripts/usage-check.py --curve)", run)
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var c curve
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(c.Series) == 0 || len(c.Labels) == 0 {
		return fmt.Errorf("%s: no series: run usage-check.py with --curve", in)
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "past requests per tool in the history"
	p.Y.Label.Text = "macro Recall@5"
	p.Legend.Top = true
	p.Legend.Left = true
	lo, hi := c.Base, c.Base
	for i, s := range c.Series {
		if len(s.Points) != len(c.Labels) {
			return fmt.Errorf("series %q has %d points for %d labels", s.Name, len(s.Points), len(c.Labels))
		}
		xy := make(plotter.XYs, len(s.Points))
		for k, y := range s.Points {
			xy[k] = plotter.XY{X: float64(k), Y: y}
			lo, hi = min(lo, y), max(hi, y)
		}
		if err := bplot.Series(p, s.Name, xy, i, 0); err != nil {
			return err
		}
	}
	base := plotter.NewFunction(func(float64) float64 { return c.Base })
	base.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	base.Color = color.Gray{Y: 0x80}
	p.Add(base)
	p.Legend.Add(fmt.Sprintf("no history (%.3f)", c.Base), base)
	p.X.Min, p.X.Max = -0.2, float64(len(c.Labels)-1)+0.2
	p.Y.Min, p.Y.Max = lo-0.02, hi+0.02
	ticks := make([]plot.Tick, len(c.Labels))
	for k, l := range c.Labels {
		ticks[k] = plot.Tick{Value: float64(k), Label: l}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 4.5*vg.Inch, out)
}
