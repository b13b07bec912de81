package harness

import (
	"fmt"
	"io"
	"slices"
	"sync"
)

// Lifetime is what a part the harness starts (Flux's controllers, the Git
// server) lives as long as: a test, whose *testing.T it is, or the
// sandbox's Session. The part registers its stop with Cleanup, and reports
// through Errorf and Logf what it saw go wrong.
type Lifetime interface {
	Cleanup(func())
	Failed() bool
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Session is a Lifetime outside tests: the sandbox's, which ends when it
// is stopped. What went wrong is written to its Log.
type Session struct {
	Log io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

var _ Lifetime = (*Session)(nil)

// Cleanup registers f to run when the session ends, last registered
// first, as testing.T runs them.
func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Failed reports whether Errorf was called.
func (s *Session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Errorf writes what went wrong to the log and marks the session failed.
func (s *Session) Errorf(format string, args ...any) {
	s.mu.Lock()
	s.failed = true
	s.mu.Unlock()
	s.Logf(format, args...)
}

// Logf writes a line to the log.
func (s *Session) Logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

// End runs the registered cleanups, last first.
func (s *Session) End() {
	s.mu.Lock()
	cleanups := slices.Clone(s.cleanups)
	s.cleanups = nil
	s.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
}
