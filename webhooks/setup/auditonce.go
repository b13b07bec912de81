package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
)

// auditPoll is how often the rules are asked again while their caches
// sync.
const auditPoll = 250 * time.Millisecond

// AuditOnce sets the rules cfg builds up over the cluster, as `steward
// serve` does but with no webhook server, metrics listener, probes or
// leader election, and returns their answers to one audit pass once every
// rule asked can answer, or an error naming those that could not within
// timeout.
func AuditOnce(ctx context.Context, restCfg *rest.Config, cfg config.Config, timeout time.Duration) (audit.Pass, error) {
	rules := webhooks.Rules(cfg)
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Cache:                  CacheOptions(rules),
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := WithManager(mgr, rules); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	defer func() { cancel(); <-stopped }()

	auditors := webhooks.Auditors(cfg.Audit, rules)
	for {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			pass := audit.Collect(ctx, auditors, mgr.GetAPIReader())
			if len(pass.Failed()) == 0 {
				return pass, nil
			}
			select {
			case <-ctx.Done():
				return nil, notAnswered(pass, timeout)
			case err := <-stopped:
				stopped <- err
				return nil, fmt.Errorf("reading the cluster: %w", err)
			case <-time.After(auditPoll):
				continue
			}
		}
		select {
		case err := <-stopped:
			stopped <- err
			if err != nil {
				return nil, fmt.Errorf("reading the cluster: %w", err)
			}
		default:
		}
		return nil, fmt.Errorf("the informer caches did not sync within --timeout %s: is the API server reachable, and may this identity list and watch what the rules read?", timeout)
	}
}

// notAnswered names each rule that could not answer, and why.
func notAnswered(p audit.Pass, timeout time.Duration) error {
	var errs []error
	for _, a := range p {
		switch {
		case a.Err == nil:
		case strings.HasPrefix(a.Err.Error(), a.Rule+": "):
			errs = append(errs, fmt.Errorf("  %w", a.Err))
		default:
			errs = append(errs, fmt.Errorf("  %s: %w", a.Rule, a.Err))
		}
	}
	return fmt.Errorf("rules could not answer within --timeout %s (their caches did not sync: may this identity list and watch what they read?):\n%w", timeout, errors.Join(errs...))
}
