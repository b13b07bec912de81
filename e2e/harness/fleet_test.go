package harness

import (
	"net"
	"strings"
	"testing"
)

// TestFleetAgentPortsFreeNamesATakenPort holds one of the addresses Fleet's
// agent always binds and wants StartFleet's check to refuse, naming it,
// rather than start an agent whose controllers would never run.
func TestFleetAgentPortsFreeNamesATakenPort(t *testing.T) {
	for i, addr := range fleetAgentAddrs {
		t.Run(addr, func(t *testing.T) {
			for _, before := range fleetAgentAddrs[:i] {
				l, err := net.Listen("tcp", before)
				if err != nil {
					t.Skipf("%s, checked first, is taken by another program: %v", before, err)
				}
				l.Close()
			}
			// Taken here, or already by another program: either way the
			// check must fail naming it.
			if l, err := net.Listen("tcp", addr); err == nil {
				defer l.Close()
			}
			err := fleetAgentPortsFree()
			if err == nil || !strings.Contains(err.Error(), addr+" is taken (the Fleet agent binds it") {
				t.Fatalf("with %s taken, the check answered %v; want an error naming it", addr, err)
			}
		})
	}
}
