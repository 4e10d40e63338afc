package tune

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/toolsrv/toolsrv/thresholds"
)

// WriteSVG draws the sweep as an SVG picture of 2×2 panels: the quality
// figures (recall, precision, abstention recall and precision, and with
// learned scores the hit rate) against the first level swept (the minimum
// score, or the minimum answerability) and the second (the relative cut, or
// the mass), and the tools offered against each, the other levels held at
// the chosen ones; a dashed line marks the chosen value. title goes on top.
//
// It is written with the standard library alone, so that the toolsrv binary
// carries no plotting library (bench/plot draws the same as a PNG, for the
// repository's pictures, from "toolsrv tune --json").
func WriteSVG(w io.Writer, r Result, title string) error {
	c := r.Chosen.Levels
	byA, byB := r.Curve("min"), r.Curve("relative")
	xA := func(p Point) float64 { return p.Levels.Min }
	xB := func(p Point) float64 { return p.Levels.Relative }
	nameA, nameB, chosenA, chosenB := "minimum score", "relative cut", c.Min, c.Relative
	learned := len(r.Curve("answerable")) > 1
	if learned {
		byA, byB = r.Curve("answerable"), r.Curve("mass")
		xA = func(p Point) float64 { return p.Levels.MinAnswerable }
		xB = func(p Point) float64 { return p.Levels.Mass }
		nameA, nameB, chosenA, chosenB = "minimum answerability", "mass", c.MinAnswerable, c.Mass
	}
	quality := []series{
		{"recall", "#1f77b4", func(f thresholds.Figures) float64 { return f.Recall }},
		{"precision", "#d62728", func(f thresholds.Figures) float64 { return f.Precision }},
		{"abstention recall", "#2ca02c", func(f thresholds.Figures) float64 { return f.AbstainRecall }},
		{"abstention precision", "#9467bd", func(f thresholds.Figures) float64 { return f.AbstainPrecision }},
	}
	if learned {
		quality = append(quality, series{"hit rate", "#787878", func(f thresholds.Figures) float64 { return f.Hit }})
	}
	offered := []series{{"tools offered", "#ff7f0e", func(f thresholds.Figures) float64 { return f.Offered }}}

	const width, height, pw, ph = 1200, 900, 600, 420
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" text-anchor="middle" font-size="16">%s</text>`+"\n", width/2, html.EscapeString(title))
	panels := []struct {
		x, y    int
		pts     []Point
		xOf     func(Point) float64
		xlabel  string
		series  []series
		chosen  float64
		yTop    float64
		ylabel  string
		fixed   string
		quality bool
	}{
		{0, 40, byA, xA, nameA, quality, chosenA, 1, "macro average (tuning part)", nameB, true},
		{pw, 40, byA, xA, nameA, offered, chosenA, 0, "tools offered per answerable query", nameB, false},
		{0, 40 + ph + 20, byB, xB, nameB, quality, chosenB, 1, "macro average (tuning part)", nameA, true},
		{pw, 40 + ph + 20, byB, xB, nameB, offered, chosenB, 0, "tools offered per answerable query", nameA, false},
	}
	for _, p := range panels {
		top := p.yTop
		if !p.quality {
			top = 1
			for _, pt := range p.pts {
				top = math.Max(top, pt.Macro.Offered)
			}
			top = math.Ceil(top)
		}
		what := "quality"
		if !p.quality {
			what = "tools offered"
		}
		drawPanel(&b, p.x, p.y, pw, ph, fmt.Sprintf("%s vs %s (%s at the chosen value)", what, p.xlabel, p.fixed),
			p.xlabel, p.ylabel, p.pts, p.xOf, p.series, p.chosen, top)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// series is one curve: a figure of the macro average.
type series struct {
	name, color string
	y           func(thresholds.Figures) float64
}

// drawPanel draws one panel at (x0, y0) of size w×h: axes with ticks, the
// curves, the chosen value and a legend.
func drawPanel(b *strings.Builder, x0, y0, w, h int, title, xlabel, ylabel string, pts []Point, xOf func(Point) float64, ss []series, chosen, yTop float64) {
	const left, right, top, bottom = 60, 20, 30, 45
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	ox, oy := float64(x0+left), float64(y0+top)
	xmin, xmax := 0.0, 1.0
	for i, p := range pts {
		v := xOf(p)
		if i == 0 || v < xmin {
			xmin = v
		}
		if i == 0 || v > xmax {
			xmax = v
		}
	}
	xmin, xmax = math.Min(xmin, chosen), math.Max(xmax, chosen)
	if xmax-xmin < 1e-9 {
		xmin, xmax = xmin-0.5, xmax+0.5
	}
	sx := func(v float64) float64 { return ox + (v-xmin)/(xmax-xmin)*pw }
	sy := func(v float64) float64 { return oy + ph - v/yTop*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="13">%s</text>`+"\n", ox+pw/2, y0+18, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", ox, oy, pw, ph)
	for i := 0; i <= 4; i++ {
		xv := xmin + (xmax-xmin)*float64(i)/4
		yv := yTop * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", sx(xv), oy, sx(xv), oy+ph)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ox, sy(yv), ox+pw, sy(yv))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.2f</text>`+"\n", sx(xv), oy+ph+16, xv)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2g</text>`+"\n", ox-6, sy(yv)+4, yv)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", ox+pw/2, oy+ph+36, html.EscapeString(xlabel))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="middle" transform="rotate(-90 %d %.1f)">%s</text>`+"\n", x0+16, oy+ph/2, x0+16, oy+ph/2, html.EscapeString(ylabel))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#606060" stroke-dasharray="6 4"/>`+"\n", sx(chosen), oy, sx(chosen), oy+ph)
	for i, s := range ss {
		var path strings.Builder
		for j, p := range pts {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, sx(xOf(p)), sy(math.Min(s.y(p.Macro), yTop)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.TrimSpace(path.String()), s.color)
		}
		ly := oy + 14 + float64(i)*16
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", ox+pw-170, ly-4, ox+pw-150, ly-4, s.color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", ox+pw-144, ly, html.EscapeString(s.name))
	}
}

// Curves is what "toolsrv tune --curves FILE" writes: the sweep and a title,
// for drawing elsewhere.
type Curves struct {
	Title  string `json:"title"`
	Result Result `json:"result"`
}
