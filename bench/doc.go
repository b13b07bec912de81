// Package bench is what Steward's two benchmarks against a real API server
// share: the load run (bench/load, `make bench`) and the cache-at-scale
// scenarios (bench/scale, `make bench-scale`). Both seed through Mix, the
// Crossplane and Flux mix of 1 XR : 5 MRs : ½ Flux object built from the
// objects in fixtures.go; both describe their run with Run and their goals
// with Goals; and both write their own section of docs/benchmarks.md with
// WriteSection, which keeps the other's section and what people wrote
// around them, and their charts with BarChart and LineChart.
package bench
