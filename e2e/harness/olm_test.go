package harness

import (
	"net"
	"strings"
	"testing"
)

// TestPortFreeSaysWhyAPortIsNeeded: a program with a hard-coded port (OLM's
// catalog operator's :8443) is not started beside another that holds it;
// the error names the port and why it is needed.
func TestPortFreeSaysWhyAPortIsNeeded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	err = portFree(addr, "a program serves there, hard-coded")
	if err == nil || !strings.Contains(err.Error(), addr+" is taken (a program serves there, hard-coded)") {
		t.Errorf("portFree(%s) while it is listened on: %v; want an error naming the port and why", addr, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := portFree(addr, "a program serves there, hard-coded"); err != nil {
		t.Errorf("portFree(%s) once it is free: %v", addr, err)
	}
}
