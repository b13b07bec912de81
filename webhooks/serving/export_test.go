package serving

// Serve is serve, the handler of one path, for the tests and benchmarks of
// package serving_test.
var Serve = serve
