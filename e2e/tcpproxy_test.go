package e2e

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// tcpProxy passes TCP connections through to Steward's webhook servers,
// handing each new connection to the next backend port in turn, as a
// Service does, and counts the connections each backend received. TLS
// passes through, so the API server verifies the certificate of whichever
// backend it reaches, and the counts tell fresh TLS handshakes from reused
// connections.
type tcpProxy struct {
	ln       net.Listener
	backends []int
	next     atomic.Uint64
	conns    []atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	closed   bool
	open     []net.Conn
}

// startTCPProxy listens on a free local port in front of backends and
// stops when the test ends.
func startTCPProxy(t *testing.T, backends ...int) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, backends: backends, conns: make([]atomic.Int64, len(backends))}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		i := int(p.next.Add(1)-1) % len(p.backends)
		p.wg.Add(1)
		go p.proxy(in, i)
	}
}

// proxy copies both ways until both sides have finished sending; each
// side's end is passed on as a half-close, as a kernel-level proxy would.
func (p *tcpProxy) proxy(in net.Conn, i int) {
	defer p.wg.Done()
	defer in.Close()
	out, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.backends[i]))
	if err != nil {
		return
	}
	defer out.Close()
	if !p.track(in, out) {
		return
	}
	p.conns[i].Add(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(out, in)
		_ = out.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(in, out)
	_ = in.(*net.TCPConn).CloseWrite()
	<-done
}

// track records an open pair for close, or reports that the proxy is
// already closed.
func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open = append(p.open, conns...)
	return true
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// connections returns how many connections each backend has received.
func (p *tcpProxy) connections() []int64 {
	out := make([]int64, len(p.conns))
	for i := range p.conns {
		out[i] = p.conns[i].Load()
	}
	return out
}

// accepted returns how many connections all backends have received.
func (p *tcpProxy) accepted() int64 {
	var n int64
	for _, c := range p.connections() {
		n += c
	}
	return n
}
