package main

import (
	"fmt"
	"io"
)

// runCheck runs the rules offline over YAML files (`steward check PATH...`).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "steward check: not available yet")
	return 2
}
