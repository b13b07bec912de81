// Package ruletest holds the checks every rule package's tests make the same
// way, so that each rule states only its own cases: how its Config defaults
// and validates, and what its handler costs against a handler that does
// nothing.
package ruletest
