package bench

import (
	"math"
	"strings"
	"testing"
)

func TestChartIsOneSVGDocumentWithEveryCategory(t *testing.T) {
	svg := BarChart([]BarPanel{{
		Title: "t", YLabel: "ms", Categories: []string{"a & b", "c"},
		Series: []Series{{Name: "x", Color: "#000", Values: []float64{1, math.NaN()}}},
	}})
	if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>\n") || !strings.Contains(svg, "a &amp; b") {
		t.Errorf("not one SVG document with escaped labels:\n%s", svg)
	}
	for raw, want := range map[float64]float64{0.7: 1, 1.3: 2, 3: 5, 7: 10, 23: 50, 0.012: 0.02} {
		if got := niceStep(raw); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceStep(%g) = %g, want %g", raw, got, want)
		}
	}
}
