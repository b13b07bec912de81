package main

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// series is one bar per category in a grouped bar chart; NaN leaves a gap.
type series struct {
	Name, Color string
	Values      []float64
}

// barPanel is one grouped bar chart, with a dashed line at RefLine when
// it is positive.
type barPanel struct {
	Title, YLabel string
	Categories    []string
	Series        []series
	RefLine       float64
}

var configColors = map[configID]string{cfgNone: "#9e9e9e", cfgPolicy: "#4e79a7", cfgAllowAll: "#f28e2b", cfgSteward: "#59a14f"}

// chartPanels are p50 latency at the fewest writers and throughput at the
// goals' number of writers relative to (a), per workload and configuration.
func chartPanels(res *results) []barPanel {
	var cats []string
	for _, w := range res.measured() {
		cats = append(cats, w.Short)
	}
	low, mid := slices.Min(res.Options.concurrency), res.level()
	lat := barPanel{Title: fmt.Sprintf("Client p50 latency at %d writer%s", low, plural(low)), YLabel: "milliseconds", Categories: cats}
	thr := barPanel{Title: fmt.Sprintf("Throughput at %d writers, relative to (a) no admission", mid), YLabel: "× (a)", Categories: cats, RefLine: 1}
	for _, cfg := range allConfigs {
		name := fmt.Sprintf("(%s) %s", cfg, configNames[cfg])
		ls, ts := series{Name: name, Color: configColors[cfg]}, series{Name: name, Color: configColors[cfg]}
		for _, w := range res.measured() {
			p50, x := math.NaN(), math.NaN()
			if p := res.find(w.Name, cfg, low); p != nil {
				p50 = ms(p.P50)
			}
			if p, base := res.find(w.Name, cfg, mid), res.find(w.Name, cfgNone, mid); p != nil && base != nil && base.Rate() > 0 {
				x = p.Rate() / base.Rate()
			}
			ls.Values, ts.Values = append(ls.Values, p50), append(ts.Values, x)
		}
		lat.Series, thr.Series = append(lat.Series, ls), append(thr.Series, ts)
	}
	return []barPanel{lat, thr}
}

// Chart geometry, in SVG user units.
const (
	chartWidth, panelHeight = 960, 330
	marginLeft, marginRight = 70, 20
	marginTop, marginBottom = 58, 80
)

// svgChart renders panels stacked vertically into one SVG document.
func svgChart(panels []barPanel) string {
	var b strings.Builder
	h := panelHeight * len(panels)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", chartWidth, h, chartWidth, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(0,%d)">`+"\n", i*panelHeight)
		p.render(&b)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (p barPanel) render(b *strings.Builder) {
	plotW, plotH := float64(chartWidth-marginLeft-marginRight), float64(panelHeight-marginTop-marginBottom)
	top := p.RefLine
	for _, s := range p.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = math.Max(top, v)
			}
		}
	}
	step := niceStep(top / 5)
	if step <= 0 {
		step = 1
	}
	top = max(math.Ceil(top/step)*step, step)
	y := func(v float64) float64 { return float64(marginTop) + plotH - v/top*plotH }
	esc := html.EscapeString
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, esc(p.Title))
	for v := 0.0; v <= top+step/2; v += step {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n",
			marginLeft, chartWidth-marginRight, y(v), y(v), marginLeft-6, y(v)+4, trimFloat(v))
	}
	fmt.Fprintf(b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n", float64(marginTop)+plotH/2, esc(p.YLabel))
	if p.RefLine > 0 {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="5,4"/>`+"\n", marginLeft, chartWidth-marginRight, y(p.RefLine), y(p.RefLine))
	}
	if len(p.Categories) == 0 {
		return
	}
	groupW := plotW / float64(len(p.Categories))
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
