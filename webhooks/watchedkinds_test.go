package webhooks

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/config"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// TestEveryRuleFollowingKindsReportsThem proves every rule that follows
// kinds through the cluster cache (clustercache.Cache.Follow) reports them
// in steward_watched_kinds under its own name, so the metric and the
// StewardWatchedKindNotSyncing alert cover it without anyone remembering
// to add it. There is no cluster: following kinds only registers them.
func TestEveryRuleFollowingKindsReportsThem(t *testing.T) {
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	following := 0
	for _, c := range Rules(config.Defaults(Sections())) {
		s, ok := c.Rule.(clustercache.ManagerSetup)
		if !ok {
			continue
		}
		cluster := clustercache.NewWithClients(nil, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
			dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), logr.Discard())
		if err := s.SetupWithManager(mgr, cluster); err != nil {
			// fleetguard asks the (absent) API server for its REST
			// mapping; it uses the manager's cache, not Follow.
			t.Logf("setting up %s without a cluster: %v", c.Name, err)
		}
		for _, name := range cluster.Followed() {
			following++
			if name != c.Name {
				t.Errorf("rule %s follows kinds as %q: the metric's rule label must be the rule's name", c.Name, name)
			}
			m, ok := c.Rule.(rule.MetricsCollector)
			if !ok {
				t.Errorf("rule %s follows kinds but is no rule.MetricsCollector", c.Name)
				continue
			}
			descs := make(chan *prometheus.Desc, 16)
			m.Collector().Describe(descs)
			close(descs)
			found := false
			for d := range descs {
				found = found || strings.Contains(d.String(), `"`+clustercache.WatchedKindsMetric+`"`) && strings.Contains(d.String(), `rule="`+c.Name+`"`)
			}
			if !found {
				t.Errorf("rule %s follows kinds but its collector does not describe %s{rule=%q}", c.Name, clustercache.WatchedKindsMetric, c.Name)
			}
		}
	}
	if following < 2 {
		t.Errorf("found %d rules following kinds, want suspendnotice and installplanguard at least", following)
	}
}
