package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Spreader.
const (
	// DefaultRemovalLag is how long a backend stays in the rotation after
	// its readiness starts failing: the time a cluster takes to see the
	// Pod unready (or terminating), update the EndpointSlice and have
	// kube-proxy rewrite its rules.
	DefaultRemovalLag = time.Second
	// DefaultReadinessPoll is how often a Spreader asks each backend's
	// readiness endpoint.
	DefaultReadinessPoll = 100 * time.Millisecond
)

// SpreaderOptions say how a Spreader follows its backends.
type SpreaderOptions struct {
	// RemovalLag is how long after a backend's readiness first fails it
	// leaves the rotation; DefaultRemovalLag when zero.
	RemovalLag time.Duration
	// ReadinessPoll is how often readiness is asked; DefaultReadinessPoll
	// when zero.
	ReadinessPoll time.Duration
}

// Spreader plays a Service in front of Steward's replicas on 127.0.0.1:
// the API server's EndpointSlices refuse loopback addresses, so here the
// harness is kube-proxy and the endpoint controller. It listens on one
// port and hands each new TCP connection to the next ready backend in
// turn, then copies bytes both ways (TLS passes through, so the API server
// verifies whichever replica it reaches). It polls each backend's
// readiness endpoint; a backend joins the rotation as soon as it is ready
// and leaves it RemovalLag after its readiness first fails (an unready
// answer, or none), as endpoints are updated a moment after a Pod turns
// unready. Connections already open stay where they are, as iptables'
// conntrack keeps them: leaving the rotation only stops new ones. A new
// connection to a backend that refuses it (a killed replica still in the
// rotation) is closed at once, and with no backend in the rotation every
// connection is, as a Service without endpoints refuses them.
type Spreader struct {
	ln   net.Listener
	opts SpreaderOptions

	mu       sync.Mutex
	backends []*spreaderBackend
	next     int
	open     map[net.Conn]struct{}
	closed   bool
	events   []SpreaderEvent
	conns    []SpreaderConn
	refused  int
	wg       sync.WaitGroup
	stopPoll chan struct{}
}

// spreaderBackend is one replica behind the Spreader.
type spreaderBackend struct {
	name     string
	addr     string
	readyURL string
	// inRotation says whether new connections may go here;
	// failingSince is when readiness first failed since it last passed.
	inRotation   bool
	failingSince time.Time
	conns        int
	stop         chan struct{}
}

// SpreaderEvent is a backend joining or leaving the rotation.
type SpreaderEvent struct {
	Time    time.Time
	Backend string
	// Joined is true when the backend joined the rotation, false when it
	// left it.
	Joined bool
}

// SpreaderConn is one connection the Spreader passed through.
type SpreaderConn struct {
	Backend        string
	Opened, Closed time.Time
	// FromClient and FromBackend count the bytes each side sent.
	FromClient, FromBackend int64
	// BackendClosedFirst says the backend finished sending (closed its
	// side) before the client did.
	BackendClosedFirst bool
}

// StartSpreader listens on a free port of 127.0.0.1 with no backends.
func StartSpreader(opts SpreaderOptions) (*Spreader, error) {
	if opts.RemovalLag <= 0 {
		opts.RemovalLag = DefaultRemovalLag
	}
	if opts.ReadinessPoll <= 0 {
		opts.ReadinessPoll = DefaultReadinessPoll
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the connection spreader: %w", err)
	}
	s := &Spreader{ln: ln, opts: opts, open: map[net.Conn]struct{}{}, stopPoll: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Port is the port the Spreader listens on, the one webhook
// configurations name.
func (s *Spreader) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Options are the Spreader's settings, defaults filled in.
func (s *Spreader) Options() SpreaderOptions { return s.opts }

// Add puts a backend behind the Spreader: name identifies it, port is
// where it accepts connections on 127.0.0.1, readyURL its readiness
// endpoint. It joins the rotation once readyURL answers 200. Adding a
// name that is already there replaces it.
func (s *Spreader) Add(name string, port int, readyURL string) {
	b := &spreaderBackend{name: name, addr: "127.0.0.1:" + strconv.Itoa(port), readyURL: readyURL, stop: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.removeLocked(name)
	s.backends = append(s.backends, b)
	s.wg.Add(1)
	go s.poll(b)
}

// Remove takes a backend away for good (its Pod is gone); its open
// connections stay open.
func (s *Spreader) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(name)
}

func (s *Spreader) removeLocked(name string) {
	s.backends = slices.DeleteFunc(s.backends, func(b *spreaderBackend) bool {
		if b.name != name {
			return false
		}
		close(b.stop)
		if b.inRotation {
			s.events = append(s.events, SpreaderEvent{Time: time.Now(), Backend: name})
		}
		return true
	})
}

// poll follows a backend's readiness until it is removed or the Spreader
// closes.
func (s *Spreader) poll(b *spreaderBackend) {
	defer s.wg.Done()
	c := &http.Client{Timeout: max(s.opts.ReadinessPoll, 500*time.Millisecond)}
	tick := time.NewTicker(s.opts.ReadinessPoll)
	defer tick.Stop()
	for {
		ready := probeReady(c, b.readyURL)
		now := time.Now()
		s.mu.Lock()
		switch {
		case ready:
			b.failingSince = time.Time{}
			if !b.inRotation {
				b.inRotation = true
				s.events = append(s.events, SpreaderEvent{Time: now, Backend: b.name, Joined: true})
			}
		case b.failingSince.IsZero():
			b.failingSince = now
		}
		if !ready && b.inRotation && now.Sub(b.failingSince) >= s.opts.RemovalLag {
			b.inRotation = false
			s.events = append(s.events, SpreaderEvent{Time: now, Backend: b.name})
		}
		s.mu.Unlock()
		select {
		case <-b.stop:
			return
		case <-s.stopPoll:
			return
		case <-tick.C:
		}
	}
}

func probeReady(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pick returns the next backend in the rotation, or nil when it is empty.
func (s *Spreader) pick() *spreaderBackend {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range s.backends {
		b := s.backends[s.next%len(s.backends)]
		s.next++
		if b.inRotation {
			b.conns++
			return b
		}
	}
	return nil
}

func (s *Spreader) accept() {
	defer s.wg.Done()
	for {
		in, err := s.ln.Accept()
		if err != nil {
			return
		}
		b := s.pick()
		if b == nil || !s.track(in) {
			s.refuse(in)
			continue
		}
		s.wg.Add(1)
		go s.pipe(in, b.name, b.addr)
	}
}

// refuse closes a connection nothing will serve, and counts it.
func (s *Spreader) refuse(in net.Conn) {
	_ = in.Close()
	s.mu.Lock()
	s.refused++
	s.mu.Unlock()
}

// track records an open connection for Close, or reports that the
// Spreader is closed.
func (s *Spreader) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.open[c] = struct{}{}
	return true
}

func (s *Spreader) untrack(cs ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		delete(s.open, c)
	}
}

// pipe copies both ways until both sides have finished sending; each
// side's end is passed on as a half-close, as the kernel passes it on for
// a NATed connection.
func (s *Spreader) pipe(in net.Conn, name, addr string) {
	defer s.wg.Done()
	defer s.untrack(in)
	defer in.Close()
	rec := SpreaderConn{Backend: name, Opened: time.Now()}
	out, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		// The replica is gone but still in the rotation: the client sees
		// its connection closed, as it would see it refused.
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		return
	}
	defer out.Close()
	if !s.track(out) {
		return
	}
	defer s.untrack(out)
	var clientDone atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.FromClient, _ = io.Copy(out, in)
		clientDone.Store(true)
		_ = out.(*net.TCPConn).CloseWrite()
	}()
	rec.FromBackend, _ = io.Copy(in, out)
	rec.BackendClosedFirst = !clientDone.Load()
	_ = in.(*net.TCPConn).CloseWrite()
	<-done
	rec.Closed = time.Now()
	s.mu.Lock()
	s.conns = append(s.conns, rec)
	s.mu.Unlock()
}

// ConnectionLog lists the connections that have ended, in the order they
// ended.
func (s *Spreader) ConnectionLog() []SpreaderConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns)
}

// InRotation names the backends new connections may go to now.
func (s *Spreader) InRotation() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.backends {
		if b.inRotation {
			out = append(out, b.name)
		}
	}
	return out
}

// WaitInRotation waits until the backends named are all in the rotation.
func (s *Spreader) WaitInRotation(timeout time.Duration, names ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		in := s.InRotation()
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(in, n) })
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("backends %v did not join the rotation within %s (in it: %v)", missing, timeout, in)
		}
		time.Sleep(s.opts.ReadinessPoll)
	}
}

// Connections counts the connections each backend has been handed, by
// name, since it was added.
func (s *Spreader) Connections() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, b := range s.backends {
		out[b.name] = b.conns
	}
	return out
}

// Refused counts the connections the Spreader closed unserved: with no
// backend in the rotation, or to a backend that did not accept it.
func (s *Spreader) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Events lists the backends' joins and departures so far, oldest first.
func (s *Spreader) Events() []SpreaderEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Close stops listening, stops polling and closes every open connection.
// It is safe to call more than once.
func (s *Spreader) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stopPoll)
	err := s.ln.Close()
	for c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
