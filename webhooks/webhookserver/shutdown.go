package webhookserver

import (
	"context"
	"os"
	"time"

	"github.com/go-logr/logr"

	"github.com/stewardhq/steward/webhooks/serving"
)

// shutdownSteps are what shutdownOnSignal does, in order.
type shutdownSteps struct {
	// Delay is --shutdown-delay, Timeout --shutdown-timeout.
	Delay, Timeout time.Duration
	Drain          *serving.Drain
	Server         interface {
		Shutdown(ctx context.Context, linger time.Duration) error
	}
	// Stop stops the manager: everything but the webhook server.
	Stop func()
	// Exit ends the process at once (os.Exit).
	Exit func(int)
}

// shutdownOnSignal waits for the first signal, then shuts Steward down in
// the order that fails no call of the API server:
//
//  1. At once, /readyz fails, so the endpoints drop this replica, and
//     every answer closes its connection (serving.Drain), so the API
//     server's next calls open connections the Service sends elsewhere.
//  2. For delay, everything keeps serving while the endpoints catch up.
//  3. The webhook listener closes. The connections still open get up to
//     delay again to carry one more call, whose answer closes them; then
//     the idle ones are closed, and the requests in flight answered, from
//     caches that still follow the cluster (Server.Shutdown). All
//     of it within timeout.
//  4. The manager stops the rest: audit, reloader, informers, probes and
//     metrics.
//
// A second signal cuts the delay short; another one after that exits at
// once.
func shutdownOnSignal(signals <-chan os.Signal, steps shutdownSteps, log logr.Logger) {
	sig := <-signals
	steps.Drain.Begin()
	log.Info("shutdown requested: reporting unready and closing each connection after its answer", "signal", sig.String(), "delay", steps.Delay.String())
	linger := steps.Delay
	select {
	case <-time.After(steps.Delay):
	case <-signals:
		log.Info("second signal: ending the shutdown delay now")
		linger = 0
	}
	go func() {
		<-signals
		log.Info("another signal during the drain: exiting now")
		steps.Exit(1)
	}()
	log.Info("closing the webhook listener; draining connections and requests in flight", "linger", linger.String(), "timeout", steps.Timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), steps.Timeout)
	if err := steps.Server.Shutdown(ctx, linger); err != nil {
		log.Error(err, "requests in flight were still unanswered at the shutdown timeout")
	}
	cancel()
	log.Info("webhook server stopped; stopping the rest")
	steps.Stop()
}
