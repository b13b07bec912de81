// Package claimguard guards Crossplane claims, composite resources (XRs)
// and managed resources (MRs) against being re-created while their
// predecessors are still being deleted, and explains deletes that wait.
//
// With Foreground deletion a claim's XR stays until every composed MR has
// deleted its external resource, which can take minutes. A claim (or XR)
// re-created meanwhile composes new MRs with the same
// crossplane.io/external-name as MRs that are still deleting it, and the
// new external resource is destroyed or corrupted. claimguard refuses those
// creates, naming what is still being deleted, and warns on deletes that
// will wait, naming what they wait for. See README.md.
package claimguard

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Rule is the claimguard admission handler.
type Rule struct {
	cfg Config
	now func() time.Time
	log logr.Logger
	// found is what discovery keeps up to date. A rule built again from a
	// reloaded configuration shares it with the rule it replaces (Inherit).
	found *discovered
}

// discovered is claimguard's view of the cluster, written by its discovery
// loop.
type discovered struct {
	// snap is the current view of Crossplane kinds and their caches; nil
	// until the first discovery has run.
	snap atomic.Pointer[snapshot]
	// ready is set once the first discovery ran and every cache it started
	// has synced (or cannot be listed).
	ready atomic.Bool
	// rulesChanged is signalled on every new snapshot: the rules of the
	// create and delete entries may have changed (see dynamicRules).
	rulesChanged chan struct{}
	// owners indexes every watch's objects by owner and claim.
	owners *ownerIndex
}

// New builds the rule from its configuration. It touches no cluster; the
// caches are set up by SetupWithManager.
func New(c Config) *Rule {
	c.Default()
	return &Rule{cfg: c, now: time.Now, log: logr.Discard(), found: &discovered{rulesChanged: make(chan struct{}, 1), owners: newOwnerIndex()}}
}

// Inherit makes r judge from the view of the cluster running's discovery
// loop keeps, with r's own settings: requireForegroundDelete changes on a
// reload; the webhook rules' settings are the running syncer's until
// Steward restarts.
func (r *Rule) Inherit(running rule.Rule) error {
	old, ok := running.(*Rule)
	if !ok {
		return fmt.Errorf("claimguard cannot take over from a %T", running)
	}
	r.found, r.log = old.found, old.log
	return nil
}

// Handle judges one admission request as if the rule were enforced.
func (r *Rule) Handle(_ context.Context, req *rule.Request) admission.Response {
	if req.Operation == admissionv1.Update {
		// Needs no cache: the request carries all it judges.
		return r.deletingUpdate(req)
	}
	s := r.found.snap.Load()
	if s == nil {
		return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("claimguard has not discovered the cluster's Crossplane kinds yet"))
	}
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	switch req.Operation {
	case admissionv1.Create:
		switch {
		case s.claims[gk] != nil:
			return r.claimCreate(s, req, s.claims[gk])
		case s.xrds[gk] != nil:
			return r.compositeCreate(s, req, s.xrds[gk])
		}
		return r.managedCreate(s, req, gk)
	case admissionv1.Delete:
		switch {
		case s.claims[gk] != nil:
			return r.claimDelete(s, req, s.claims[gk])
		case s.xrds[gk] != nil:
			return r.compositeDelete(s, req, s.xrds[gk])
		}
		return admission.Allowed("not a claim or composite resource kind claimguard knows")
	}
	return admission.Allowed("")
}

// decode reads the request's object (CREATE) or stored object (DELETE).
func decode(req *rule.Request, r role) (*requested, *admission.Response) {
	v := req.View()
	if req.Operation == admissionv1.Delete {
		v = req.OldView()
	}
	o, err := decodeObject(v, r)
	if err != nil {
		resp := admission.Errored(http.StatusBadRequest, err)
		return nil, &resp
	}
	name, namespace := o.name(), o.namespace()
	if (name == "" && req.Name != "") || (namespace == "" && req.Namespace != "") {
		if name == "" {
			name = req.Name
		}
		if namespace == "" {
			namespace = req.Namespace
		}
		o.id = newID(namespace, name)
	}
	return o, nil
}

// usable turns a watch that cannot answer into the response for the
// request: an error while its cache syncs (the failure policy decides), a
// warning when Steward may not list the kind (nothing to check against).
func usable(w *watch, what string) *admission.Response {
	var resp admission.Response
	switch {
	case w == nil:
		resp = admission.Allowed("").WithWarnings(fmt.Sprintf("claimguard does not cache %s and could not check this request", what))
	case w.state() == stateSyncing:
		resp = admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("the cache of %s has not synced yet; retry shortly", w.gvr.GroupResource()))
	case w.state() == stateForbidden:
		resp = admission.Allowed("").WithWarnings(fmt.Sprintf("claimguard could not check this request: Steward may not list %s (grant list and watch through a ClusterRole labelled %s=true)", w.gvr.GroupResource(), AggregationLabel))
	default:
		return nil
	}
	return &resp
}

// withUnchecked adds the coverage warning to an allowed response.
func withUnchecked(resp admission.Response, cov *coverage) admission.Response {
	if len(cov.unchecked) == 0 {
		return resp
	}
	return resp.WithWarnings(uncheckedNote(cov))
}

var (
	_ rule.Rule                 = (*Rule)(nil)
	_ clustercache.ManagerSetup = (*Rule)(nil)
	_ rule.Inheritor            = (*Rule)(nil)
)
