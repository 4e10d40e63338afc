package plot

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Color is the i-th color of the series palette (it repeats after four).
func Color(i int) color.Color {
	palette := [...]color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	return palette[i%len(palette)]
}

// Series adds xy to p as the i-th series: a line through round points
// of radius (0: the library's default), in Color(i), named in the legend.
// A series without points is an error.
func Series(p *plot.Plot, name string, xy plotter.XYs, i int, radius vg.Length) error {
	if len(xy) == 0 {
		return fmt.Errorf("series %q has no points", name)
	}
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("series %q: %w", name, err)
	}
	l.Color, pts.Color = Color(i), Color(i)
	pts.Shape = draw.CircleGlyph{}
	if radius > 0 {
		pts.Radius = radius
	}
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// Main runs a plotting command of the form "NAME IN.json OUT.png": it
// checks the arguments, calls run and exits with its status, saying
// what went wrong (usage names where IN.json comes from).
func Main(name, usage string, run func(in, out string) error) {
	if len(os.Args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: %s %s\n", name, usage)
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
