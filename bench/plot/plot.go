package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/toolsrv/toolsrv/bench/tune"
	"github.com/toolsrv/toolsrv/thresholds"
)

var (
	colRecall    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colPrecision = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colAbstain   = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colAbstPrec  = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colOffered   = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colChosen    = color.Gray{Y: 0x60}
)

// Tune draws the sweep as a PNG of 2×2 panels: precision, recall and
// abstention against the minimum score (top left) and against the relative
// cut (bottom left), and tools offered against each (right), the other
// levels held at the chosen ones; a dashed line marks the chosen value.
// title goes on top (the embedder, for instance).
func Tune(w io.Writer, r tune.Result, title string) error {
	c := r.Chosen.Levels
	byMin, byRel := r.Curve("min"), r.Curve("relative")
	xMin := func(p tune.Point) float64 { return p.Levels.Min }
	xRel := func(p tune.Point) float64 { return p.Levels.Relative }
	sub := fmt.Sprintf("relative %.2f, max %d", c.Relative, c.MaxTools)
	subRel := fmt.Sprintf("min %.2f, max %d", c.Min, c.MaxTools)
	nameMin, nameRel, chosenMin, chosenRel := "minimum score", "relative cut", c.Min, c.Relative
	learned := len(r.Curve("answerable")) > 1
	if learned { // version 2 levels: answerability cut-off and mass
		byMin, byRel = r.Curve("answerable"), r.Curve("mass")
		xMin = func(p tune.Point) float64 { return p.Levels.MinAnswerable }
		xRel = func(p tune.Point) float64 { return p.Levels.Mass }
		sub = fmt.Sprintf("mass %.2f, max %d", c.Mass, c.MaxTools)
		subRel = fmt.Sprintf("answerability ≥ %.2f, max %d", c.MinAnswerable, c.MaxTools)
		nameMin, nameRel, chosenMin, chosenRel = "minimum answerability", "mass", c.MinAnswerable, c.Mass
	}

	quality := func(pts []tune.Point, x func(tune.Point) float64, xlabel, fixed string, chosen float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = "quality vs " + xlabel + " (" + fixed + ")"
		p.X.Label.Text = xlabel
		p.Y.Label.Text = "macro average (tuning part)"
		p.Y.Min, p.Y.Max = 0, 1
		p.Add(plotter.NewGrid())
		series := []struct {
			name string
			col  color.Color
			y    func(thresholds.Figures) float64
		}{
			{"recall", colRecall, func(f thresholds.Figures) float64 { return f.Recall }},
			{"precision", colPrecision, func(f thresholds.Figures) float64 { return f.Precision }},
			{"abstention recall", colAbstain, func(f thresholds.Figures) float64 { return f.AbstainRecall }},
			{"abstention precision", colAbstPrec, func(f thresholds.Figures) float64 { return f.AbstainPrecision }},
		}
		if learned {
			series = append(series, struct {
				name string
				col  color.Color
				y    func(thresholds.Figures) float64
			}{"hit rate", color.RGBA{R: 120, G: 120, B: 120, A: 255}, func(f thresholds.Figures) float64 { return f.Hit }})
		}
		for _, s := range series {
			xy := make(plotter.XYs, len(pts))
			for i, pt := range pts {
				xy[i] = plotter.XY{X: x(pt), Y: s.y(pt.Macro)}
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			l.Color = s.col
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(s.name, l)
		}
		if err := addChosen(p, chosen, 0, 1); err != nil {
			return nil, err
		}
		// Headroom above 1 keeps the legend off the curves.
		p.Y.Min, p.Y.Max = 0, 1.45
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}})
		p.Legend.Top = true
		p.Legend.Left = false
		return p, nil
	}
	offered := func(pts []tune.Point, x func(tune.Point) float64, xlabel, fixed string, chosen float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = "tools offered vs " + xlabel + " (" + fixed + ")"
		p.X.Label.Text = xlabel
		p.Y.Label.Text = "tools offered per answerable query"
		p.Add(plotter.NewGrid())
		xy := make(plotter.XYs, len(pts))
		top := 1.0
		for i, pt := range pts {
			xy[i] = plotter.XY{X: x(pt), Y: pt.Macro.Offered}
			if pt.Macro.Offered > top {
				top = pt.Macro.Offered
			}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = colOffered
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add("tools offered", l)
		if r.Objective.MaxOffered > 0 {
			cap, err := plotter.NewLine(plotter.XYs{{X: xy[0].X, Y: r.Objective.MaxOffered}, {X: xy[len(xy)-1].X, Y: r.Objective.MaxOffered}})
			if err != nil {
				return nil, err
			}
			cap.Color = colOffered
			cap.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(cap)
			p.Legend.Add(fmt.Sprintf("cap %.1f", r.Objective.MaxOffered), cap)
		}
		top = math.Max(top, r.Objective.MaxOffered)
		if err := addChosen(p, chosen, 0, top); err != nil {
			return nil, err
		}
		// Headroom keeps the legend off the curves.
		p.Y.Min, p.Y.Max = 0, top*1.45
		p.Legend.Top = true
		return p, nil
	}
	if len(byMin) < 2 || len(byRel) < 2 {
		return fmt.Errorf("plotting the sweep: too few points (%d by min, %d by relative)", len(byMin), len(byRel))
	}
	q1, err := quality(byMin, xMin, nameMin, sub, chosenMin)
	if err != nil {
		return err
	}
	o1, err := offered(byMin, xMin, nameMin, sub, chosenMin)
	if err != nil {
		return err
	}
	q2, err := quality(byRel, xRel, nameRel, subRel, chosenRel)
	if err != nil {
		return err
	}
	o2, err := offered(byRel, xRel, nameRel, subRel, chosenRel)
	if err != nil {
		return err
	}
	const width, height = 32 * vg.Centimeter, 24 * vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))
	dc := draw.New(img)
	head := plot.New()
	head.Title.Text = title
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadTop: vg.Points(24), PadX: vg.Points(14), PadY: vg.Points(14), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	plots := [][]*plot.Plot{{q1, o1}, {q2, o2}}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	// Overall title along the top edge.
	dc.FillText(draw.TextStyle{Color: color.Black, Font: head.Title.TextStyle.Font, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: head.Title.TextStyle.Handler},
		vg.Point{X: width / 2, Y: height - vg.Points(4)}, title)
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

func addChosen(p *plot.Plot, x, y0, y1 float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return err
	}
	l.Color = colChosen
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("chosen %.2f", x), l)
	return nil
}
