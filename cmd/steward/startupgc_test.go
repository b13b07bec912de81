package main

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestCollectorWorksHarderOnlyUntilStarted(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	var ready atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collectHarderUntilStarted(ctx, "", func(context.Context) bool { return ready.Load() }, time.Millisecond, time.Hour, logr.Discard())
	if got := gcPercent(); got != startupGCPercent {
		t.Fatalf("GOGC while starting = %d, want %d", got, startupGCPercent)
	}
	time.Sleep(20 * time.Millisecond)
	if got := gcPercent(); got != startupGCPercent {
		t.Fatalf("GOGC before ready = %d, want %d", got, startupGCPercent)
	}
	ready.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC once ready = %d, want 100 again", gcPercent())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCollectorWorksHarderForAtMostItsLimit: Steward that never starts
// (an informer whose list never finishes) goes back to the usual pace.
func TestCollectorWorksHarderForAtMostItsLimit(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collectHarderUntilStarted(ctx, "", func(context.Context) bool { return false }, time.Millisecond, 50*time.Millisecond, logr.Discard())
	if got := gcPercent(); got != startupGCPercent {
		t.Fatalf("GOGC while starting = %d, want %d", got, startupGCPercent)
	}
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC past the limit = %d, want 100 again", gcPercent())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCollectorPaceIsTheOperatorsWhenGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	collectHarderUntilStarted(context.Background(), "200", func(context.Context) bool { return false }, time.Millisecond, time.Hour, logr.Discard())
	if got := gcPercent(); got != 100 {
		t.Errorf("with GOGC set Steward changed the collector's pace to %d", got)
	}
}

func TestReadinessRecorderIsReadyOnlyWhenEveryCheckPasses(t *testing.T) {
	var failing atomic.Bool
	r := &readinessRecorder{Manager: nil}
	r.checks = append(r.checks, func(*http.Request) error { return nil }, func(*http.Request) error {
		if failing.Load() {
			return errors.New("not yet")
		}
		return nil
	})
	failing.Store(true)
	if r.ready(context.Background()) {
		t.Error("ready while a check fails")
	}
	failing.Store(false)
	if !r.ready(context.Background()) {
		t.Error("not ready once every check passes")
	}
}
