package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// ScaledKinds maps the resources whose scale subresource the guards
// guard to their kinds.
var ScaledKinds = map[string]schema.GroupVersionKind{
	"deployments":  {Group: "apps", Version: "v1", Kind: "Deployment"},
	"statefulsets": {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	"replicasets":  {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	// kubectl scale rc and the HorizontalPodAutoscaler still use it.
	"replicationcontrollers": {Version: "v1", Kind: "ReplicationController"},
}

// ScaleRules are the webhook rules of the scale subresource of
// ScaledKinds.
func ScaleRules() []admissionregistrationv1.RuleWithOperations {
	update := rule.Operations(admissionregistrationv1.Update)
	return []admissionregistrationv1.RuleWithOperations{
		rule.Resources(update, []string{"apps"}, []string{"*"}, []string{"deployments/scale", "statefulsets/scale", "replicasets/scale"}, admissionregistrationv1.NamespacedScope),
		rule.Resources(update, []string{""}, []string{"v1"}, []string{"replicationcontrollers/scale"}, admissionregistrationv1.NamespacedScope),
	}
}

// ScaleResolver is a Resolver that also finds a workload's owners from
// its name alone: a Scale carries no labels.
type ScaleResolver interface {
	OwnersOf(ctx context.Context, ref Ref) ([]Owner, error)
}

// replicasPointer is the field a scale request changes.
var replicasPointer = object.Pointer{"spec", "replicas"}

// scale guards a change of a workload's replicas through its scale
// subresource, as an update of /spec/replicas.
func (g *Guard) scale(ctx context.Context, req *rule.Request, sr ScaleResolver) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	gvk, ok := ScaledKinds[req.Resource.Resource]
	if !ok || req.Resource.Group != gvk.Group {
		return admission.Allowed("")
	}
	if who, ok := g.Trusted(req.UserInfo); ok {
		return admission.Allowed("written by " + who)
	}
	oldReplicas, err := Replicas(req.OldView())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("scale, old object: %w", err))
	}
	newReplicas, err := Replicas(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("scale, new object: %w", err))
	}
	if sameReplicas(oldReplicas, newReplicas) {
		return admission.Allowed("")
	}
	ref := Ref{GroupVersionKind: gvk, Namespace: req.Namespace, Name: req.Name}
	found, err := sr.OwnersOf(ctx, ref)
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, err)
	}
	owners, resp, ok := g.judgeOwners(req, ref, found)
	if !ok {
		return resp
	}
	// Clipped: the configured list is shared by concurrent requests.
	skip := append(slices.Clip(g.skip.of(gvk.GroupKind())), commonSkip(owners)...)
	if Skipped(replicasPointer, skip) {
		return admission.Allowed("only the ignored field /spec/replicas changed")
	}
	c := object.Changes{First: []string{replicasPointer.String()}, Total: 1}
	return admission.Denied(g.msg.changed(ref, owners, c))
}

// Replicas reads spec.replicas of an autoscaling/v1 Scale: nil when it is
// not set.
func Replicas(v *object.View) (*int64, error) {
	if err := v.Err(); err != nil {
		return nil, err
	}
	raw := v.Field("spec", "replicas")
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("decoding Scale: spec.replicas: %w", err)
	}
	return &n, nil
}

func sameReplicas(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
