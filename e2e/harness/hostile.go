package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostileLoad is one round of unauthenticated maximum-size reviews sent
// straight to Steward's webhook port, while a person's ordinary write goes
// through the API server, which calls Steward for it.
type HostileLoad struct {
	Clients int
	Flood   FloodResult
	// Peak is Steward's VmHWM over the round.
	Peak int64
	// Answered counts ordinary writes that got Steward's own answer (its
	// denial); Failed those that got anything else, such as the API
	// server's "failed calling webhook".
	Answered, Failed int
	// Slowest is the longest an ordinary write took.
	Slowest time.Duration
	// FirstFailure is the first failed write's error.
	FirstFailure string
}

const (
	hostileNamespace = "hostile-load"
	// fleetguardDenial starts the API server's error for fleetguard's
	// answer, as opposed to an error calling it.
	fleetguardDenial = `admission webhook "fleetguard.steward.dev" denied the request`
)

// RunHostileLoad floods Steward's fleetguard path from clients connections,
// each sending reviews of 7 MiB for d (at most perClient each), while the user
// "jane" tries every interval to create a ConfigMap carrying Fleet's keys
// through the API server: an ordinary request that Steward must keep
// answering (with its denial) within the webhook's timeout.
func (e *Env) RunHostileLoad(ctx context.Context, clients, perClient int, d, interval time.Duration) (HostileLoad, error) {
	res := HostileLoad{Clients: clients}
	s := e.Steward
	if s == nil {
		return res, fmt.Errorf("steward is not running")
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return res, err
	}
	jane, err := e.As("jane", "system:authenticated")
	if err != nil {
		return res, err
	}
	body := MaxSizeReview(7*1024*1024 - 4096)
	if err := ResetPeakMemory(s.PID()); err != nil {
		return res, fmt.Errorf("resetting Steward's peak memory: %w", err)
	}

	floodCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var latencies []time.Duration
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for floodCtx.Err() == nil {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				GenerateName: "spoofed-", Namespace: hostileNamespace,
				Labels:      map[string]string{"objectset.rio.cattle.io/hash": "x"},
				Annotations: map[string]string{"objectset.rio.cattle.io/id": "default-web"},
			}}
			start := time.Now()
			err := jane.Create(ctx, cm)
			latencies = append(latencies, time.Since(start))
			switch {
			case err != nil && strings.Contains(err.Error(), fleetguardDenial):
				res.Answered++
			default:
				res.Failed++
				if res.FirstFailure == "" {
					res.FirstFailure = fmt.Sprint(err)
				}
			}
			select {
			case <-floodCtx.Done():
			case <-tick.C:
			}
		}
	})
	res.Flood = Flood(ctx, s.URL("/validate/fleetguard"), s.CABundle(), body, clients, perClient, d)
	stop()
	wg.Wait()
	if len(latencies) > 0 {
		res.Slowest = slices.Max(latencies)
	}
	m, err := ProcessMemory(s.PID())
	if err != nil {
		return res, err
	}
	res.Peak = m.Peak
	return res, nil
}
