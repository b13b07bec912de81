package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// series is one bar per category in a grouped bar chart.
type series struct {
	Name  string
	Color string
	// Values are the bar heights; NaN leaves a gap.
	Values []float64
	// Marks, when set, are drawn as a short line above each bar (e.g. p90).
	Marks []float64
}

// barPanel is one grouped bar chart.
type barPanel struct {
	Title      string
	YLabel     string
	Categories []string
	Series     []series
	// RefLine draws a dashed horizontal line at this value when > 0.
	RefLine float64
	// MarkName names the marks in the legend.
	MarkName string
}

var configColors = map[configID]string{
	cfgNone:     "#9e9e9e",
	cfgPolicy:   "#4e79a7",
	cfgAllowAll: "#f28e2b",
	cfgSteward:  "#59a14f",
}

// Chart geometry, in SVG user units.
const (
	chartWidth   = 960
	panelHeight  = 330
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 58
	marginBottom = 80
)

// svgChart renders panels stacked vertically into one SVG document.
func svgChart(panels []barPanel) string {
	var b strings.Builder
	height := panelHeight * len(panels)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(0,%d)">`+"\n", i*panelHeight)
		p.render(&b)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (p barPanel) render(b *strings.Builder) {
	plotW := float64(chartWidth - marginLeft - marginRight)
	plotH := float64(panelHeight - marginTop - marginBottom)
	top := 0.0
	for _, s := range p.Series {
		for i, v := range s.Values {
			top = math.Max(top, finite(v))
			if s.Marks != nil && i < len(s.Marks) {
				top = math.Max(top, finite(s.Marks[i]))
			}
		}
	}
	top = math.Max(top, p.RefLine)
	step := niceStep(top / 5)
	if step <= 0 {
		step = 1
	}
	top = math.Ceil(top/step) * step
	if top <= 0 {
		top = 1
	}
	y := func(v float64) float64 { return float64(marginTop) + plotH - v/top*plotH }

	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(p.Title))
	// Axis and grid.
	for v := 0.0; v <= top+step/2; v += step {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", marginLeft, chartWidth-marginRight, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n", marginLeft-6, y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n",
		float64(marginTop)+plotH/2, html.EscapeString(p.YLabel))
	if p.RefLine > 0 {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="5,4"/>`+"\n",
			marginLeft, chartWidth-marginRight, y(p.RefLine), y(p.RefLine))
	}
	// Bars.
	n := len(p.Categories)
	if n == 0 {
		return
	}
	groupW := plotW / float64(n)
	barW := groupW * 0.8 / float64(max(len(p.Series), 1))
	for ci, cat := range p.Categories {
		x0 := float64(marginLeft) + float64(ci)*groupW + groupW*0.1
		for si, s := range p.Series {
			if ci >= len(s.Values) || math.IsNaN(s.Values[ci]) || math.IsInf(s.Values[ci], 0) {
				continue
			}
			v := s.Values[ci]
			x := x0 + float64(si)*barW
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				x, y(v), barW-1, y(0)-y(v), s.Color, html.EscapeString(cat), html.EscapeString(s.Name), trimFloat(v))
			if s.Marks != nil && ci < len(s.Marks) && !math.IsNaN(s.Marks[ci]) {
				m := s.Marks[ci]
				cx := x + (barW-1)/2
				fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", cx, cx, y(v), y(m))
				fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", cx-barW/4, cx+barW/4, y(m), y(m))
			}
		}
		cx := x0 + groupW*0.4
		fmt.Fprintf(b, `<text transform="translate(%.1f,%.1f) rotate(-20)" text-anchor="end" fill="#222">%s</text>`+"\n",
			cx+10, y(0)+16, html.EscapeString(cat))
	}
	// Legend: one row under the title, left to right.
	lx := float64(marginLeft)
	for _, s := range p.Series {
		fmt.Fprintf(b, `<rect x="%.1f" y="30" width="12" height="12" fill="%s"/><text x="%.1f" y="40" fill="#222">%s</text>`+"\n",
			lx, s.Color, lx+16, html.EscapeString(s.Name))
		lx += textWidth(s.Name) + 30
	}
	if p.MarkName != "" {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="30" y2="42" stroke="#222"/><line x1="%.1f" x2="%.1f" y1="30" y2="30" stroke="#222"/><text x="%.1f" y="40" fill="#222">%s</text>`+"\n",
			lx+6, lx+6, lx+2, lx+10, lx+16, html.EscapeString(p.MarkName))
	}
}

// textWidth estimates the width of 12px Helvetica text.
func textWidth(s string) float64 { return float64(len(s)) * 6.4 }

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 0
	}
	exp := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-0" {
		return "0"
	}
	return s
}
