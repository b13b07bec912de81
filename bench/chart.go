package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one bar per category in a grouped bar chart; NaN leaves a gap.
type Series struct {
	Name, Color string
	Values      []float64
}

// BarPanel is one grouped bar chart, with a dashed line at RefLine when
// it is positive.
type BarPanel struct {
	Title, YLabel string
	Categories    []string
	Series        []Series
	RefLine       float64
}

// Chart geometry, in SVG user units: the bar charts' panels, stacked, and
// the line chart.
const (
	chartWidth, panelHeight = 960, 330
	lineChartHeight         = 420
	marginLeft, marginRight = 70, 20
	marginTop, marginBottom = 58, 80
)

// svgDoc is one SVG document of the charts' width and height whose content
// draw writes.
func svgDoc(height int, draw func(b *strings.Builder)) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	draw(&b)
	b.WriteString("</svg>\n")
	return b.String()
}

// axis rounds top up to a whole number of nice steps of about top/n, a
// step of at least least (and 1 when top is 0).
func axis(top, n, least float64) (float64, float64) {
	step := niceStep(top / n)
	if step <= 0 {
		step = 1
	}
	step = max(step, least)
	return max(math.Ceil(top/step)*step, step), step
}

// yAxis draws a chart's title and its y axis from 0 to top, panel pixels
// high: a grid line and its value every step, and the axis label. It
// returns where a value lies.
func yAxis(b *strings.Builder, title, label string, top, step float64, panel int) (y func(float64) float64) {
	plotH := float64(panel - marginTop - marginBottom)
	y = func(v float64) float64 { return float64(marginTop) + plotH - v/top*plotH }
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(title))
	for v := 0.0; v <= top+step/2; v += step {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			marginLeft, chartWidth-marginRight, y(v), y(v), marginLeft-6, y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n", float64(marginTop)+plotH/2, html.EscapeString(label))
	return y
}

// BarChart renders panels stacked vertically into one SVG document.
func BarChart(panels []BarPanel) string {
	return svgDoc(panelHeight*len(panels), func(b *strings.Builder) {
		for i, p := range panels {
			fmt.Fprintf(b, `<g transform="translate(0,%d)">`+"\n", i*panelHeight)
			p.render(b)
			b.WriteString("</g>\n")
		}
	})
}

func (p BarPanel) render(b *strings.Builder) {
	top := p.RefLine
	for _, s := range p.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = math.Max(top, v)
			}
		}
	}
	top, step := axis(top, 5, 0)
	y, esc := yAxis(b, p.Title, p.YLabel, top, step, panelHeight), html.EscapeString
	if p.RefLine > 0 {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="5,4"/>`+"\n", marginLeft, chartWidth-marginRight, y(p.RefLine), y(p.RefLine))
	}
	if len(p.Categories) == 0 {
		return
	}
	groupW := float64(chartWidth-marginLeft-marginRight) / float64(len(p.Categories))
	barW := groupW * 0.8 / float64(max(len(p.Series), 1))
	for ci, cat := range p.Categories {
		x0 := float64(marginLeft) + float64(ci)*groupW + groupW*0.1
		for si, s := range p.Series {
			if v := s.Values[ci]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
					x0+float64(si)*barW, y(v), barW-1, y(0)-y(v), s.Color, esc(cat), esc(s.Name), trimFloat(v))
			}
		}
		fmt.Fprintf(b, `<text transform="translate(%.1f,%.1f) rotate(-20)" text-anchor="end" fill="#222">%s</text>`+"\n", x0+groupW*0.4+10, y(0)+16, esc(cat))
	}
	lx := float64(marginLeft) // the legend: one row under the title
	for _, s := range p.Series {
		fmt.Fprintf(b, `<rect x="%.1f" y="30" width="12" height="12" fill="%s"/><text x="%.1f" y="40" fill="#222">%s</text>`+"\n", lx, s.Color, lx+16, esc(s.Name))
		lx += float64(len(s.Name))*6.4 + 30
	}
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 0
	}
	exp := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

func trimFloat(v float64) string {
	if s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), "."); s != "" && s != "-0" {
		return s
	}
	return "0"
}

// Line is one series of a line chart: points (x, y) in x order, drawn
// dashed when Dashed.
type Line struct {
	Name, Color string
	Dashed      bool
	X, Y        []float64
}

func (l Line) dash() string {
	if l.Dashed {
		return ` stroke-dasharray="6,4"`
	}
	return ""
}

// RefLine is a horizontal line across a chart, labelled under its right
// end (above it the legend may be).
type RefLine struct {
	Label string
	Y     float64
}

func LineChart(title, xLabel, yLabel string, lines []Line, refs []RefLine) string {
	var xTop, yTop float64
	for _, l := range lines {
		for i := range l.X {
			xTop, yTop = math.Max(xTop, l.X[i]), math.Max(yTop, l.Y[i])
		}
	}
	for _, r := range refs {
		yTop = math.Max(yTop, r.Y)
	}
	xTop, xStep := axis(xTop, 8, 1)
	yTop, yStep := axis(yTop, 6, 1)
	plotW := float64(chartWidth - marginLeft - marginRight)
	x := func(v float64) float64 { return float64(marginLeft) + v/xTop*plotW }
	esc := html.EscapeString
	return svgDoc(lineChartHeight, func(b *strings.Builder) {
		y := yAxis(b, title, yLabel, yTop, yStep, lineChartHeight)
		for v := 0.0; v <= xTop+xStep/2; v += xStep {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#f0f0f0"/><text x="%.1f" y="%.1f" text-anchor="middle" fill="#444">%s</text>`+"\n",
				x(v), x(v), marginTop, y(0), x(v), y(0)+16, Kilo(int(v)))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444">%s</text>`+"\n", float64(marginLeft)+plotW/2, y(0)+36, esc(xLabel))
		for _, r := range refs {
			fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="2,3"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n",
				marginLeft, chartWidth-marginRight, y(r.Y), y(r.Y), chartWidth-marginRight-4, y(r.Y)+14, esc(r.Label))
		}
		for _, l := range lines {
			var pts []string
			for i := range l.X {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(l.X[i]), y(l.Y[i])))
			}
			if len(pts) > 0 {
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", l.Color, l.dash(), strings.Join(pts, " "))
			}
			for i := range l.X {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s objects, %.1f MiB</title></circle>`+"\n", x(l.X[i]), y(l.Y[i]), l.Color, esc(l.Name), Kilo(int(l.X[i])), l.Y[i])
			}
		}
		for i, l := range lines { // the legend: two rows under the title
			lx, ly := float64(marginLeft)+float64(i/2)*280, 34+float64(i%2)*14
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%.1f" fill="#222">%s</text>`+"\n",
				lx, lx+22, ly, ly, l.Color, l.dash(), lx+28, ly+4, esc(l.Name))
		}
	})
}
