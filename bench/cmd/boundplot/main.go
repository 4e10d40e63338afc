// Command boundplot draws the curves of bench/scripts/offered-bound.py as a
// PNG: for each half of the eval corpora, macro hit (a relevant tool offered)
// against the tools offered on average, with the target as a shaded
// corner (at most 3 tools, a hit rate of at least 0.68). Used for the
// repository's picture:
//
//	bench/scripts/offered-bound.py bin/toolsrv /tmp/c --curves /tmp/bound.json
//	go run ./bench/cmd/boundplot /tmp/bound.json bench/offered-bound.png
package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	bplot "github.com/toolsrv/toolsrv/bench/plot"
)

// curves is what offered-bound.py --curves writes.
type curves struct {
	Title  string `json:"title"`
	Target struct {
		Offered float64 `json:"offered"`
		Hit     float64 `json:"hit"`
	} `json:"target"`
	Halves []struct {
		Name   string `json:"name"`
		Series []struct {
			Name   string       `json:"name"`
			Points [][2]float64 `json:"points"`
		} `json:"series"`
		Points []struct {
			Name string  `json:"name"`
			X    float64 `json:"x"`
			Y    float64 `json:"y"`
		} `json:"points"`
	} `json:"halves"`
}

func main() {
	bplot.Main("boundplot", "CURVES.json OUT.png (CURVES.json from bench/scripts/offered-bound.py --curves)", run)
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var c curves
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(c.Halves) == 0 {
		return fmt.Errorf("%s: no curves: run offered-bound.py with --curves", in)
	}
	plots := make([]*plot.Plot, len(c.Halves))
	for i, h := range c.Halves {
		p := plot.New()
		p.Title.Text = h.Name
		p.X.Label.Text = "tools offered per answerable request (at most, on every corpus)"
		p.Y.Label.Text = "macro hit: a relevant tool offered"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0.8, 10.2, 0.4, 0.8
		p.Add(plotter.NewGrid())
		target, err := plotter.NewPolygon(plotter.XYs{
			{X: p.X.Min, Y: c.Target.Hit}, {X: c.Target.Offered, Y: c.Target.Hit},
			{X: c.Target.Offered, Y: p.Y.Max}, {X: p.X.Min, Y: p.Y.Max},
		})
		if err != nil {
			return err
		}
		target.Color = color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0x40}
		target.LineStyle.Width = 0
		p.Add(target)
		p.Legend.Add(fmt.Sprintf("target: hit ≥ %.2f with ≤ %g tools", c.Target.Hit, c.Target.Offered), target)
		for j, s := range h.Series {
			xy := make(plotter.XYs, len(s.Points))
			for k, pt := range s.Points {
				xy[k] = plotter.XY{X: pt[0], Y: pt[1]}
			}
			if err := bplot.Series(p, s.Name, xy, j, vg.Points(2)); err != nil {
				return err
			}
		}
		for _, q := range h.Points {
			sc, err := plotter.NewScatter(plotter.XYs{{X: q.X, Y: q.Y}})
			if err != nil {
				return err
			}
			sc.Shape = draw.CrossGlyph{}
			sc.Radius = vg.Points(5)
			sc.Color = color.Black
			p.Add(sc)
			p.Legend.Add(q.Name, sc)
		}
		p.Legend.Top = false
		p.Legend.Left = false
		p.Legend.XOffs = -vg.Points(4)
		p.Legend.YOffs = vg.Points(4)
		plots[i] = p
	}
	const width, height = 16 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadTop: vg.Points(24), PadX: vg.Points(12), PadY: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8), PadBottom: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	dc.FillText(draw.TextStyle{Color: color.Black, Font: plots[0].Title.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plots[0].Title.TextStyle.Handler},
		vg.Point{X: width / 2, Y: height - vg.Points(4)}, c.Title)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
