package installplanguard

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OLM's Subscription condition types the audit reads.
const (
	conditionPlanMissing = "InstallPlanMissing"
	conditionPlanPending = "InstallPlanPending"
	conditionPlanFailed  = "InstallPlanFailed"
)

var auditedConditions = []string{conditionPlanMissing, conditionPlanPending, conditionPlanFailed}

// maxConditionMessage bounds the message kept of each condition: OLM's
// are a sentence, and a cache must not hold whatever a writer put there.
const maxConditionMessage = 256

// keepPlanStatus keeps what the audit reads of a Subscription: its
// identity, status.state, status.lastUpdated, the plan it points at
// (installPlanRef, or the older installplan) and the three InstallPlan
// conditions; not its spec, the resolved bundle's details or other
// conditions. It is idempotent, as informers require.
func keepPlanStatus(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := identityOf(u)
	status := map[string]any{}
	for _, f := range []string{"state", "lastUpdated"} {
		if v, found, _ := unstructured.NestedString(u.Object, "status", f); found {
			status[f] = v
		}
	}
	if name, found, _ := unstructured.NestedString(u.Object, "status", "installPlanRef", "name"); found {
		ref := map[string]any{"name": name}
		if ns, found, _ := unstructured.NestedString(u.Object, "status", "installPlanRef", "namespace"); found {
			ref["namespace"] = ns
		}
		status["installPlanRef"] = ref
	}
	if name, found, _ := unstructured.NestedString(u.Object, "status", "installplan", "name"); found {
		status["installplan"] = map[string]any{"name": name}
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var kept []any
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); !slices.Contains(auditedConditions, t) {
			continue
		}
		k := map[string]any{}
		for _, f := range []string{"type", "status", "reason", "message", "lastTransitionTime"} {
			if v, ok := m[f].(string); ok {
				if len(v) > maxConditionMessage {
					v = v[:maxConditionMessage]
				}
				k[f] = v
			}
		}
		kept = append(kept, k)
	}
	if kept != nil {
		status["conditions"] = kept
	}
	if len(status) > 0 {
		slim.Object["status"] = status
	}
	return slim, nil
}
