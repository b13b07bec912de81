// Package suspendnotice makes suspended Flux objects visible.
//
// Before Flux 2.6 a suspended Kustomization (and other kinds) still emits
// "Reconciliation finished in 1.2s, next run in 10m0s", so dashboards and
// people believe it is being reconciled. The rule records who suspended an
// object and when (annotations steward.dev/suspended-by and -at), warns the
// user that it will not reconcile until resumed, and rewrites the events Flux
// controllers emit about a suspended object so they say so.
package suspendnotice

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "suspendnotice"

// Suspensions reports whether a Flux object carries the suspension record,
// from an informer cache.
type Suspensions interface {
	Suspended(gr schema.GroupResource, namespace, name string) bool
}

// Rule is the suspendnotice admission rule.
type Rule struct {
	cfg Config
	now func() time.Time
	// suspensions is nil until SetupWithManager: rendering manifests and
	// offline checks have no cluster, and then no event is rewritten.
	suspensions Suspensions
}

var (
	_ rule.Rule                 = (*Rule)(nil)
	_ clustercache.ManagerSetup = (*Rule)(nil)
	_ rule.Inheritor            = (*Rule)(nil)
)

// New builds the rule from its (defaulted) configuration. It does not touch
// any cluster.
func New(c Config) *Rule {
	return &Rule{cfg: c, now: time.Now}
}

// Handle returns the rule's verdict for one request.
func (r *Rule) Handle(_ context.Context, req *rule.Request) admission.Response {
	if req.Kind.Kind == "Event" {
		return r.events(req)
	}
	return r.suspension(req)
}
