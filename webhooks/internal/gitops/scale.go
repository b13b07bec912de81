package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// ScaledKinds maps the resources whose scale subresource the guards
// guard to their kinds; the map is the caller's own.
func ScaledKinds() map[string]schema.GroupVersionKind { return maps.Clone(scaledKinds) }

// scaledKinds is what ScaledKinds returns, read on every scale request.
var scaledKinds = map[string]schema.GroupVersionKind{
	"deployments":  {Group: "apps", Version: "v1", Kind: "Deployment"},
	"statefulsets": {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	"replicasets":  {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	// kubectl scale rc and the HorizontalPodAutoscaler still use it.
	"replicationcontrollers": {Version: "v1", Kind: "ReplicationController"},
}

// Autoscalers are the identities that scale workloads through /scale as
// their job: the HorizontalPodAutoscaler (kube-controller-manager's
// horizontal-pod-autoscaler service account) and KEDA's operator, which
// scales to and from zero. GitOps tools keep their replicas where Git
// declares none, as Flux's and Argo CD's documentation tell HPA users to
// do. Where Git declares replicas too, the two fight and the tool reverts
// the autoscaler at each reconcile: a configuration error that is not
// Steward's to refuse, and that the audit reports (AutoscalerFights).
// Their scale requests never reach Steward.
func Autoscalers() []string {
	return []string{
		"system:serviceaccount:kube-system:horizontal-pod-autoscaler",
		"system:serviceaccount:keda:keda-operator",
	}
}

// ScaleRules are the webhook rules of the scale subresource of
// scaledKinds.
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
	gvk, ok := scaledKinds[req.Resource.Resource]
	if !ok || req.Resource.Group != gvk.Group {
		return admission.Allowed("")
	}
	if who, ok := g.Trusted(req.UserInfo); ok {
		return admission.Allowed("written by " + who)
	}
	if slices.Contains(Autoscalers(), req.UserInfo.Username) {
		return admission.Allowed("scaled by the autoscaler " + req.UserInfo.Username)
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
	declared, unrecorded := true, ""
	if rr, ok := sr.(ReplicasRecord); ok {
		var err error
		if declared, unrecorded, err = rr.ReplicasDeclared(ctx, ref, owners); err != nil {
			return admission.Errored(http.StatusServiceUnavailable, err)
		}
	}
	switch {
	case declared:
		return admission.Denied(g.msg.changedGit(ref, owners, fieldSplit{git: c, unrecorded: unrecorded}))
	case g.machinery(req.UserInfo), g.undeclared == UndeclaredMirror:
		// The tools keep replicas Git does not declare, and none strips
		// what is written through /scale (kustomize-controller's cleanup
		// leaves subresource entries alone), so mirror allows people too.
		return admission.Allowed(fmt.Sprintf("%s scaled the workload, whose replicas Git does not declare: %s", req.UserInfo.Username, keeps(owners)))
	}
	return admission.Denied(g.msg.undeclared(ref, owners, c))
}

// ReplicasRecord is a ScaleResolver that also reads whether Git declares
// a workload's replicas, so that a scale request, whose Scale carries no
// managedFields, is judged by the workload's own. A resolver without it
// has every workload's replicas counted as Git's.
type ReplicasRecord interface {
	// ReplicasDeclared reports whether one of the owners' field managers
	// owns the workload's spec.replicas (ReplicasInGit).
	ReplicasDeclared(ctx context.Context, ref Ref, owners []Owner) (declared bool, unrecorded string, err error)
}

// ReplicasInGit reports whether one of the owners' tools declares a
// workload's spec.replicas, by its field managers' entries (or, for a
// tool that records it, its last-applied annotation: declaredFor); with
// no entry of an owner's managers, every field counts as Git's, and
// unrecorded names them.
func ReplicasInGit(obj metav1.Object, owners []Owner) (declared bool, unrecorded string) {
	read := entriesOf(obj.GetManagedFields())
	for _, o := range owners {
		d, ok := declaredFor(read, o, nil, obj.GetAnnotations())
		if !ok {
			return true, o.managers()
		}
		if d.owns(object.New(nil), replicasPointer) {
			return true, ""
		}
	}
	return false, ""
}

// APIWorkloads reads workloads' managedFields from the API server: one GET
// of the workload's metadata per scale request that reaches a guard, which
// are people's and operators' only (the autoscalers', the tools' and
// Kubernetes' controllers' never leave the API server).
type APIWorkloads struct{ Reader client.Reader }

// ReplicasDeclared implements ReplicasRecord. Without a reader (a rule
// built without a cluster) the replicas count as Git's.
func (w APIWorkloads) ReplicasDeclared(ctx context.Context, ref Ref, owners []Owner) (bool, string, error) {
	if w.Reader == nil {
		return true, "", nil
	}
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(ref.GroupVersionKind)
	if err := w.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, o); err != nil {
		return false, "", fmt.Errorf("reading the managedFields of %s: %w", ref, err)
	}
	declared, unrecorded := ReplicasInGit(o, owners)
	return declared, unrecorded, nil
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
