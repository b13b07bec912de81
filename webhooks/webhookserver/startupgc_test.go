package webhookserver

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
	collectHarderUntilStarted(ctx, "", func(context.Context) bool { return ready.Load() }, smallHeap, time.Millisecond, time.Hour, logr.Discard())
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

// smallHeap is a live heap too small for the headroom cap to matter.
func smallHeap() uint64 { return 1 << 20 }

func TestStartupPercentCapsTheHeadroomOfALargeLiveHeap(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, startupGCPercent},
		{1 << 20, startupGCPercent},
		{2 * startupHeadroom, startupGCPercent},
		{4 * startupHeadroom, 25},
		{100 * startupHeadroom, minStartupGCPercent},
	} {
		if got := startupPercent(c.live); got != c.want {
			t.Errorf("startupPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestCollectorLowersItsPaceAsTheLiveHeapGrows: while starting, GOGC
// follows the live heap down, and back up if it shrinks.
func TestCollectorLowersItsPaceAsTheLiveHeapGrows(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	var live atomic.Uint64
	var ready atomic.Bool
	live.Store(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collectHarderUntilStarted(ctx, "", func(context.Context) bool { return ready.Load() }, live.Load, time.Millisecond, time.Hour, logr.Discard())
	waitForGCPercent := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); gcPercent() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("GOGC = %d, want %d", gcPercent(), want)
			}
		}
	}
	waitForGCPercent(startupGCPercent)
	live.Store(4 * startupHeadroom)
	waitForGCPercent(25)
	live.Store(startupHeadroom)
	waitForGCPercent(startupGCPercent)
	ready.Store(true)
	waitForGCPercent(100)
}

// TestCollectorWorksHarderForAtMostItsLimit: Steward that never starts
// (an informer whose list never finishes) goes back to the usual pace.
func TestCollectorWorksHarderForAtMostItsLimit(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collectHarderUntilStarted(ctx, "", func(context.Context) bool { return false }, smallHeap, time.Millisecond, 50*time.Millisecond, logr.Discard())
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
	collectHarderUntilStarted(context.Background(), "200", func(context.Context) bool { return false }, smallHeap, time.Millisecond, time.Hour, logr.Discard())
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
