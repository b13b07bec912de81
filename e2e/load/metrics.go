package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/stewardhq/steward/e2e/harness"
)

// scrape is one reading of a process's Prometheus endpoint, in the
// protobuf format: it is the only one that carries native histograms, whose
// fine buckets (about 9% wide) give usable handler percentiles where the
// classic buckets of controller-runtime's latency histogram are a factor of
// ten apart.
type scrape map[string]*dto.MetricFamily

var scrapeClient = &http.Client{Timeout: 20 * time.Second}

// readMetrics scrapes url.
func readMetrics(url string) (scrape, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", protoFormat)
	resp, err := scrapeClient.Do(req)
	return decodeScrape(url, resp, err)
}

// readStewardMetrics scrapes Steward, which serves its metrics over HTTPS
// to authenticated clients only.
func readStewardMetrics(s *harness.Steward) (scrape, error) {
	resp, err := s.MetricsRequest(protoFormat)
	return decodeScrape(s.MetricsURL(), resp, err)
}

var protoFormat = string(expfmt.NewFormat(expfmt.TypeProtoDelim))

func decodeScrape(url string, resp *http.Response, err error) (scrape, error) {
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	s := scrape{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if err == io.EOF {
				return s, nil
			}
			return nil, fmt.Errorf("decoding the metrics of %s: %w", url, err)
		}
		s[mf.GetName()] = mf
	}
}

// value sums the samples of name whose labels include want, as harness.SumFamilies does.
func (s scrape) value(name string, want map[string]string) float64 {
	return harness.SumFamilies(s, name, want)
}

// histogram is a native histogram's positive buckets as absolute indexes
// and counts, summed over every series that matched.
type histogram struct {
	schema  int32
	zero    uint64
	buckets map[int32]uint64
	// classic holds the classic buckets (upper bound to cumulative count)
	// when the series has no native buckets.
	classic map[float64]uint64
	count   uint64
}

// histogram sums the series of name whose labels include want.
func (s scrape) histogram(name string, want map[string]string) histogram {
	h := histogram{buckets: map[int32]uint64{}, classic: map[float64]uint64{}}
	for _, m := range s[name].GetMetric() {
		if !harness.HasLabels(m, want) || m.Histogram == nil {
			continue
		}
		mh := m.Histogram
		h.count += mh.GetSampleCount()
		for _, b := range mh.GetBucket() {
			h.classic[b.GetUpperBound()] += b.GetCumulativeCount()
		}
		if len(mh.GetPositiveSpan()) == 0 && mh.GetZeroCount() == 0 {
			continue
		}
		h.schema = mh.GetSchema()
		h.zero += mh.GetZeroCount()
		idx, d, count := int32(0), 0, int64(0)
		deltas := mh.GetPositiveDelta()
		for i, span := range mh.GetPositiveSpan() {
			if i == 0 {
				idx = span.GetOffset()
			} else {
				idx += span.GetOffset()
			}
			for j := uint32(0); j < span.GetLength() && d < len(deltas); j++ {
				count += deltas[d]
				d++
				h.buckets[idx] += uint64(count)
				idx++
			}
		}
	}
	return h
}

// sub returns the observations made between an earlier reading and h.
func (h histogram) sub(earlier histogram) histogram {
	out := histogram{schema: h.schema, buckets: map[int32]uint64{}, classic: map[float64]uint64{}}
	if h.count < earlier.count || h.zero < earlier.zero {
		// A reset (the process restarted) or a failed reading: nothing
		// can be said about the interval.
		return out
	}
	out.zero, out.count = h.zero-earlier.zero, h.count-earlier.count
	for i, c := range h.buckets {
		if c > earlier.buckets[i] {
			out.buckets[i] = c - earlier.buckets[i]
		}
	}
	for b, c := range h.classic {
		if c >= earlier.classic[b] {
			out.classic[b] = c - earlier.classic[b]
		}
	}
	return out
}

// add sums the observations of two intervals (of the same schema).
func (h histogram) add(other histogram) histogram {
	out := histogram{schema: h.schema, zero: h.zero + other.zero, count: h.count + other.count, buckets: map[int32]uint64{}, classic: map[float64]uint64{}}
	if h.count == 0 {
		out.schema = other.schema
	}
	for _, src := range []histogram{h, other} {
		for i, c := range src.buckets {
			out.buckets[i] += c
		}
		for b, c := range src.classic {
			out.classic[b] += c
		}
	}
	return out
}

// p50p99 returns the median and the 99th percentile, both zero without
// observations.
func (h histogram) p50p99() (float64, float64) {
	if q50, q99 := h.quantile(0.5), h.quantile(0.99); h.count > 0 && finiteNum(q50) && finiteNum(q99) {
		return q50, q99
	}
	return 0, 0
}

// quantile returns the upper bound of the bucket holding the q-quantile,
// so it never understates; NaN without observations.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	if rank == 0 {
		rank = 1
	}
	if len(h.buckets) == 0 && h.zero == 0 {
		bounds := make([]float64, 0, len(h.classic))
		for b := range h.classic {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		for _, b := range bounds {
			if h.classic[b] >= rank {
				return b
			}
		}
		return math.Inf(1)
	}
	if h.zero >= rank {
		return 0
	}
	seen := h.zero
	idx := make([]int32, 0, len(h.buckets))
	for i := range h.buckets {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	base := math.Pow(2, math.Pow(2, -float64(h.schema)))
	for _, i := range idx {
		seen += h.buckets[i]
		if seen >= rank {
			return math.Pow(base, float64(i))
		}
	}
	return math.Pow(base, float64(idx[len(idx)-1]))
}
