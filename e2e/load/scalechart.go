package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// line is one series of a line chart: points (x, y) in x order, drawn
// dashed when Dashed.
type line struct {
	Name, Color string
	Dashed      bool
	X, Y        []float64
}

// refLine is a horizontal line across a chart, labelled under its right
// end (above it the legend may be).
type refLine struct {
	Label string
	Y     float64
}

// memoryChart plots Steward's synced resident memory, start-up peak and
// live heap (MiB) against the objects of the mix seeded, WatchList on and
// off, from empty caches to the largest size, with the memory limit and
// the largest size's goal.
func memoryChart(res *scaleResults) string {
	var lines []line
	for _, s := range []struct {
		name   string
		figure func(*scaleMeasure) int64
		dashed bool
	}{{"synced resident", syncedRSS, false}, {"start-up peak", func(m *scaleMeasure) int64 { return m.ReadyPeakRSS }, true}, {"live heap", liveHeap, false}} {
		for _, wl := range []bool{true, false} {
			l := line{Name: fmt.Sprintf("%s, WatchList %s", s.name, onOff(wl)), Dashed: s.dashed,
				Color: map[bool]string{true: "#59a14f", false: "#e15759"}[wl]}
			if s.name == "live heap" {
				l.Color = map[bool]string{true: "#4e79a7", false: "#f28e2b"}[wl]
			}
			points := res.mix(wl)
			if base := res.find(scenarioEmpty, wl); base != nil {
				points = append([]*scaleMeasure{base}, points...)
			}
			for _, m := range points {
				l.X, l.Y = append(l.X, float64(m.Seeded)), append(l.Y, float64(s.figure(m))/(1<<20))
			}
			lines = append(lines, l)
		}
	}
	refs := []refLine{{fmt.Sprintf("memory limit %s", mib(res.Limit)), float64(res.Limit) / (1 << 20)},
		{fmt.Sprintf("goal at %s objects: %s", kilo(fullScaleSizes[len(fullScaleSizes)-1]), mib(largestScaleGoal)), largestScaleGoal / (1 << 20)}}
	return svgLineChart("Steward's memory against the objects cached (XRs, MRs, Flux objects)", "objects seeded", "MiB", lines, refs)
}

// svgLineChart renders one line chart as an SVG document.
func svgLineChart(title, xLabel, yLabel string, lines []line, refs []refLine) string {
	const height = 420
	plotW, plotH := float64(chartWidth-marginLeft-marginRight), float64(height-marginTop-marginBottom)
	var xTop, yTop float64
	for _, l := range lines {
		for i := range l.X {
			xTop, yTop = math.Max(xTop, l.X[i]), math.Max(yTop, l.Y[i])
		}
	}
	for _, r := range refs {
		yTop = math.Max(yTop, r.Y)
	}
	xStep, yStep := max(niceStep(xTop/8), 1), max(niceStep(yTop/6), 1)
	xTop, yTop = max(math.Ceil(xTop/xStep)*xStep, xStep), max(math.Ceil(yTop/yStep)*yStep, yStep)
	x := func(v float64) float64 { return float64(marginLeft) + v/xTop*plotW }
	y := func(v float64) float64 { return float64(marginTop) + plotH - v/yTop*plotH }
	esc := html.EscapeString

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, esc(title))
	for v := 0.0; v <= yTop+yStep/2; v += yStep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			marginLeft, chartWidth-marginRight, y(v), y(v), marginLeft-6, y(v)+4, trimFloat(v))
	}
	for v := 0.0; v <= xTop+xStep/2; v += xStep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#f0f0f0"/><text x="%.1f" y="%.1f" text-anchor="middle" fill="#444">%s</text>`+"\n",
			x(v), x(v), marginTop, y(0), x(v), y(0)+16, kilo(int(v)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444">%s</text>`+"\n", float64(marginLeft)+plotW/2, y(0)+36, esc(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n", float64(marginTop)+plotH/2, esc(yLabel))
	for _, r := range refs {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="2,3"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n",
			marginLeft, chartWidth-marginRight, y(r.Y), y(r.Y), chartWidth-marginRight-4, y(r.Y)+14, esc(r.Label))
	}
	for _, l := range lines {
		var pts []string
		for i := range l.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(l.X[i]), y(l.Y[i])))
		}
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", l.Color, dash, strings.Join(pts, " "))
		}
		for i := range l.X {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s objects, %.1f MiB</title></circle>`+"\n", x(l.X[i]), y(l.Y[i]), l.Color, esc(l.Name), kilo(int(l.X[i])), l.Y[i])
		}
	}
	// The legend: two rows under the title.
	for i, l := range lines {
		lx, ly := float64(marginLeft)+float64(i/2)*280, 34+float64(i%2)*14
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%.1f" fill="#222">%s</text>`+"\n",
			lx, lx+22, ly, ly, l.Color, dash, lx+28, ly+4, esc(l.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
