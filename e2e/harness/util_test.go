package harness

import "testing"

// TestFreePortNeverReturnsAPortTwice plays a kernel that offers the same
// port again right after it was closed, as one did to a Steward's metrics
// and health ports.
func TestFreePortNeverReturnsAPortTwice(t *testing.T) {
	offers := []int{40001, 40001, 40002, 40001, 40003}
	saved, savedPorts := kernelPort, handedOut.ports
	handedOut.ports = map[int]bool{}
	t.Cleanup(func() { kernelPort, handedOut.ports = saved, savedPorts })
	kernelPort = func() (int, error) {
		p := offers[0]
		offers = offers[1:]
		return p, nil
	}
	var got []int
	for range 3 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if want := []int{40001, 40002, 40003}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("FreePort returned %v; want %v", got, want)
	}
}

// TestFreePortPortsAreFreeAndDistinct draws many real ports: each can be
// listened on, and none repeats.
func TestFreePortPortsAreFreeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
