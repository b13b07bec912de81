package fleetguard

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
)

// Drift is read from managedFields (gitops.DriftOf): a manager other than
// the Fleet agent or Kubernetes' own controllers that wrote after the
// agent's last write changed the object outside Git. The workload cache
// drops managedFields (cachetrim.go), so the transform keeps, for drifted
// objects only, a small summary in driftAnnotation; the audit reads it.

// AgentFieldManager is the field manager the Fleet agent writes with. The
// agent sets none: Helm (which installs each bundle deployment) and
// client-go fall back to the base name of the running binary, and the
// agent's image runs /usr/bin/fleetagent.
const AgentFieldManager = "fleetagent"

// agentFieldManagers are the Fleet agent's field managers, as DriftOf
// takes them.
var agentFieldManagers = []string{AgentFieldManager}

// fleetKeeps is what Fleet does with a field its chart does not declare:
// Helm's three-way merge leaves it, and Fleet's drift detection compares
// only what the chart renders.
const fleetKeeps = "Fleet keeps fields outside the chart"

// driftAnnotation holds a drifted workload's summary in the cache. It is
// never written to the cluster: the transform builds the cached object's
// annotations itself and keeps no other annotation of this name.
const driftAnnotation = "fleetguard.steward.dev/drift"

// driftSummary is what the cache keeps of a drifted workload: a
// gitops.Drift, bounded by gitops.MaxDriftFields and MaxDriftManagers, so
// a drifted object costs the cache a few hundred bytes at most.
type driftSummary gitops.Drift

// driftOf summarizes the writes in managedFields made after the Fleet
// agent's last one by anyone but the agent and Kubernetes' controllers,
// leaving out server-managed fields (status, bookkeeping); the ignored
// fields are left out when the audit reads the summary, so a reloaded
// configuration applies to what is cached. It returns false when there
// are none: the common case, which costs no decoding.
func driftOf(entries []metav1.ManagedFieldsEntry) (driftSummary, bool) {
	d, ok := gitops.DriftOf(entries, agentFieldManagers, nil)
	return driftSummary(d), ok
}

// encode is the summary as the annotation keeps it.
func (s driftSummary) encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeDrift reads a summary back; anything else is no drift.
func decodeDrift(v string) (driftSummary, bool) {
	var s driftSummary
	if v == "" || json.Unmarshal([]byte(v), &s) != nil || len(s.Fields)+s.Unlisted == 0 || s.Unlisted < 0 {
		return driftSummary{}, false
	}
	return s, true
}
