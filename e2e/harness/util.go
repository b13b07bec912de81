package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"sync"
)

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// handedOut holds the ports FreePort has returned, so that it never returns
// one twice: it closes its listener before the caller binds the port, and
// the kernel may give the same port to the next call (an e2e run saw a
// Steward's metrics and health ports drawn equal, and the Steward fail to
// start). A run draws a few thousand of the kernel's ~28,000 ephemeral
// ports; past maxHandedOut the record starts again.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

const maxHandedOut = 10000

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on right
// now and that it has not returned before. Another process could take it
// before it is used; the ports come from the kernel's ephemeral range, so
// that is rare on a test machine.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if len(handedOut.ports) >= maxHandedOut {
		clear(handedOut.ports)
	}
	for range 100 {
		port, err := kernelPort()
		if err != nil {
			return 0, err
		}
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port: the kernel offered 100 ports in a row that were handed out already")
}

// kernelPort is a port the kernel offers for 127.0.0.1:0 (a variable for
// the test, which plays a kernel repeating itself).
var kernelPort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree fails, saying why the port is needed, when addr cannot be
// listened on: a program with a hard-coded port would otherwise start
// without its endpoint, or take it from another test's program.
func portFree(addr, why string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s is taken (%s): stop what listens there first: %w", addr, why, err)
	}
	return l.Close()
}
