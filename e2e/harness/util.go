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
