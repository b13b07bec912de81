package serving

import (
	"net/http"
	"sync/atomic"
)

// Drain moves the API server off a replica that is shutting down before
// the replica stops listening.
//
// The API server keeps its connections to a webhook open between calls
// (HTTP keep-alive), and a Service's endpoints only steer new
// connections: a replica that left the endpoints keeps receiving calls on
// the connections already open to it. When it then closes an idle one,
// the API server may have just sent a call on it, which fails ("failed
// calling webhook ... EOF"): the API server never retries a POST. So from
// Begin on (SIGTERM, while the replica keeps serving for --shutdown-delay)
// every answer carries Connection: close, and its connection is closed
// once the answer is sent. The API server reads that header with the
// answer and opens a new connection for its next call, which the Service
// sends to another replica. By the end of the delay the connections in
// use have moved; only ones left idle throughout remain. Over HTTP/2 Go's
// server turns the header into a GOAWAY, with the same effect.
type Drain struct {
	draining atomic.Bool
}

// Begin starts the drain: answers from now on close their connections.
func (d *Drain) Begin() { d.draining.Store(true) }

// Draining says whether Begin has been called.
func (d *Drain) Draining() bool { return d.draining.Load() }

// Wrap makes next's answers close their connections once the drain has
// begun, including the answers of requests that arrived before it.
func (d *Drain) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&closingWriter{ResponseWriter: w, drain: d}, r)
	})
}

// closingWriter adds Connection: close to an answer's header when the
// header is written during the drain.
type closingWriter struct {
	http.ResponseWriter
	drain   *Drain
	decided bool
}

func (c *closingWriter) decide() {
	if c.decided {
		return
	}
	c.decided = true
	if c.drain.Draining() {
		c.Header().Set("Connection", "close")
	}
}

func (c *closingWriter) WriteHeader(code int) {
	c.decide()
	c.ResponseWriter.WriteHeader(code)
}

func (c *closingWriter) Write(b []byte) (int, error) {
	c.decide()
	return c.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer (deadlines,
// flushing).
func (c *closingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
