package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
)

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on right
// now. Another process could take it before it is used; the ports come from
// the kernel's ephemeral range, so that is rare on a test machine.
func FreePort() (int, error) {
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
