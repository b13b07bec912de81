package harness

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// fakeReplica is a backend that answers each line with its name and the
// line, and whose readiness endpoint answers as ready says.
type fakeReplica struct {
	name  string
	ln    net.Listener
	ready atomic.Bool
	probe *httptest.Server
}

func startFakeReplica(t *testing.T, name string) *fakeReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeReplica{name: name, ln: ln}
	r.ready.Store(true)
	r.probe = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !r.ready.Load() {
			http.Error(w, "shutting down", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(r.probe.Close)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					if _, err := c.Write([]byte(name + " " + s.Text() + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return r
}

func (r *fakeReplica) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func startTestSpreader(t *testing.T, lag time.Duration, replicas ...*fakeReplica) *Spreader {
	t.Helper()
	s, err := StartSpreader(SpreaderOptions{RemovalLag: lag, ReadinessPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, r := range replicas {
		s.Add(r.name, r.port(), r.probe.URL)
	}
	return s
}

// ask opens a connection through the spreader, sends one line and returns
// the connection and the answer ("" when the connection was closed).
func ask(t *testing.T, s *Spreader, line string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(s.Port()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	return c, br, roundTrip(c, br, line)
}

func roundTrip(c net.Conn, br *bufio.Reader, line string) string {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return ""
	}
	answer, err := br.ReadString('\n')
	if err != nil {
		return ""
	}
	return answer[:len(answer)-1]
}

func TestSpreaderHandsNewConnectionsToReadyReplicasInTurn(t *testing.T) {
	a, b, c := startFakeReplica(t, "a"), startFakeReplica(t, "b"), startFakeReplica(t, "c")
	c.ready.Store(false)
	s := startTestSpreader(t, time.Second, a, b, c)
	if err := s.WaitInRotation(2*time.Second, "a", "b"); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for range 6 {
		_, _, answer := ask(t, s, "hi")
		got[answer]++
	}
	if got["a hi"] != 3 || got["b hi"] != 3 {
		t.Errorf("six connections went %v; want three to each ready replica and none to the unready one", got)
	}
	if conns := s.Connections(); conns["c"] != 0 {
		t.Errorf("the unready replica was handed %d connections", conns["c"])
	}
}

func TestSpreaderRemovesAnUnreadyReplicaAfterTheLagAndKeepsItsConnections(t *testing.T) {
	const lag = 300 * time.Millisecond
	a, b := startFakeReplica(t, "a"), startFakeReplica(t, "b")
	s := startTestSpreader(t, lag, a, b)
	if err := s.WaitInRotation(2*time.Second, "a", "b"); err != nil {
		t.Fatal(err)
	}
	// An open connection to a.
	var conn net.Conn
	var br *bufio.Reader
	for conn == nil {
		c, r, answer := ask(t, s, "first")
		if answer == "a first" {
			conn, br = c, r
		}
	}

	a.ready.Store(false)
	unready := time.Now()
	for time.Since(unready) < lag*2/3 {
		if in := s.InRotation(); len(in) != 2 {
			t.Fatalf("%s after its readiness failed, a left the rotation before the %s lag: %v", time.Since(unready), lag, in)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := waitFor(2*time.Second, func() bool { in := s.InRotation(); return len(in) == 1 && in[0] == "b" }); err != nil {
		t.Fatalf("a did not leave the rotation: %v", s.InRotation())
	}
	left := time.Since(unready)
	if left < lag {
		t.Errorf("a left the rotation %s after it turned unready, before the %s lag", left, lag)
	}
	for range 4 {
		if _, _, answer := ask(t, s, "new"); answer != "b new" {
			t.Errorf("a new connection got %q, want b's answer", answer)
		}
	}
	if answer := roundTrip(conn, br, "again"); answer != "a again" {
		t.Errorf("the connection opened to a before it left the rotation answered %q, want a's answer: open connections stay", answer)
	}
	events := s.Events()
	if last := events[len(events)-1]; last.Backend != "a" || last.Joined {
		t.Errorf("last event %+v, want a leaving", last)
	}

	a.ready.Store(true)
	if err := s.WaitInRotation(2*time.Second, "a"); err != nil {
		t.Errorf("a ready again: %v", err)
	}
}

func TestSpreaderClosesConnectionsNothingServes(t *testing.T) {
	a := startFakeReplica(t, "a")
	s := startTestSpreader(t, 200*time.Millisecond, a)
	if err := s.WaitInRotation(2*time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	// Killed: it still is in the rotation until the lag has passed, and
	// the connections handed to it are closed.
	a.ln.Close()
	a.probe.Close()
	if _, _, answer := ask(t, s, "hi"); answer != "" {
		t.Errorf("a connection to the killed replica got %q, want it closed", answer)
	}
	if err := waitFor(2*time.Second, func() bool { return len(s.InRotation()) == 0 }); err != nil {
		t.Fatalf("the killed replica stays in the rotation: %v", s.InRotation())
	}
	if _, _, answer := ask(t, s, "hi"); answer != "" {
		t.Errorf("with no replica in the rotation a connection got %q, want it closed", answer)
	}
	if n := s.Refused(); n != 2 {
		t.Errorf("Refused() = %d, want 2", n)
	}
}

func waitFor(timeout time.Duration, f func() bool) error {
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			return errTimeout
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

var errTimeout = errors.New("timed out")

func TestSpreaderLogsEachConnectionAndWhichSideClosedIt(t *testing.T) {
	a := startFakeReplica(t, "a")
	s := startTestSpreader(t, time.Second, a)
	if err := s.WaitInRotation(2*time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	c, _, answer := ask(t, s, "hi")
	if answer != "a hi" {
		t.Fatalf("answer %q", answer)
	}
	c.Close()
	if err := waitFor(2*time.Second, func() bool { return len(s.ConnectionLog()) == 1 }); err != nil {
		t.Fatal("the closed connection is not in the log")
	}
	got := s.ConnectionLog()[0]
	if got.Backend != "a" || got.FromClient != int64(len("hi\n")) || got.FromBackend != int64(len("a hi\n")) || got.BackendClosedFirst || got.Closed.Before(got.Opened) {
		t.Errorf("logged %+v; want backend a, 3 bytes from the client and 5 back, closed by the client", got)
	}
}
