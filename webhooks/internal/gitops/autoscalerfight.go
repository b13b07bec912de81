package gitops

import (
	"context"
	"fmt"
	"strconv"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckAutoscalerFight is every guard's audit check of workloads whose
// replicas both Git and an autoscaler set.
const CheckAutoscalerFight = "autoscaler-fight"

// The autoscalers' /scale requests never reach Steward (Autoscalers), so
// an autoscaled workload whose replicas Git declares too is not refused:
// the tool puts Git's value back at each reconcile and the autoscaler
// scales again, a fight only the cluster's state shows. The audit reports
// it from the tool's own record: the workload's managedFields, where the
// tool's field manager owns spec.replicas, and a HorizontalPodAutoscaler
// (KEDA's ScaledObjects make one too) that targets the workload.
//
// The record shows the fight from the tool's reconcile until the
// autoscaler's next sync (15 s by default) takes the replicas' ownership
// back, and at all times while the autoscaler wants Git's value: that is
// when the audit reports it. While the autoscaler holds the replicas,
// nothing on the object tells Git's from its own.

// GitReplicas is a workload the audit found whose replicas one of its
// owners' field managers owns.
type GitReplicas struct {
	Ref    Ref
	Owners []Owner
}

// ReplicasOwned reports whether one of the owners' tools declares a
// workload's spec.replicas (as ReplicasInGit reads it). Unlike
// ReplicasInGit, a workload without an entry of the owners' managers does
// not count: nothing says Git declares its replicas.
func ReplicasOwned(obj metav1.Object, owners []Owner) bool {
	read := entriesOf(obj.GetManagedFields())
	for _, o := range owners {
		if d, ok := declaredFor(read, o, nil, obj.GetAnnotations()); ok && d.owns(object.New(nil), replicasPointer) {
			return true
		}
	}
	return false
}

// AutoscalerFights reports each workload of declared that a
// HorizontalPodAutoscaler targets, with Git's replicas (the workload's,
// which the tool last applied) and the autoscaler's bounds and wish. The
// autoscalers are listed once, through api, only when declared holds a
// workload; where they cannot be listed (not granted, not served) there
// is nothing to report.
func (g *Guard) AutoscalerFights(ctx context.Context, api client.Reader, declared []GitReplicas) ([]rule.Finding, error) {
	if len(declared) == 0 || api == nil {
		return nil, nil
	}
	byTarget := make(map[targetKey]GitReplicas, len(declared))
	for _, d := range declared {
		byTarget[targetKey{d.Ref.Namespace, d.Ref.Group, d.Ref.Kind, d.Ref.Name}] = d
	}
	var out []rule.Finding
	next := ""
	for page := 0; ; page++ {
		list := &autoscalingv2.HorizontalPodAutoscalerList{}
		if err := api.List(ctx, list, client.Limit(AuditPageSize), client.Continue(next)); err != nil {
			if page == 0 && unlistable(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
		}
		for i := range list.Items {
			hpa := &list.Items[i]
			t := hpa.Spec.ScaleTargetRef
			gv, err := schema.ParseGroupVersion(t.APIVersion)
			if err != nil {
				continue // the autoscaler itself cannot follow it
			}
			d, ok := byTarget[targetKey{hpa.Namespace, gv.Group, t.Kind, t.Name}]
			if !ok {
				continue
			}
			replicas, found, err := workloadReplicas(ctx, api, d.Ref)
			if err != nil {
				return nil, err
			}
			if found {
				out = append(out, g.fightFinding(d, hpa, replicas))
			}
		}
		if next = list.Continue; next == "" {
			break
		}
	}
	return out, nil
}

// targetKey is a workload as an autoscaler's scaleTargetRef names it.
type targetKey struct{ namespace, group, kind, name string }

// workloadReplicas reads a workload's spec.replicas; found is false when
// the workload is gone since it was listed.
func workloadReplicas(ctx context.Context, api client.Reader, ref Ref) (replicas int64, found bool, err error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	if err := api.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if unlistable(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("reading the replicas of %s: %w", ref, err)
	}
	n, ok, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if err != nil {
		return 0, false, fmt.Errorf("reading the replicas of %s: %w", ref, err)
	}
	if !ok {
		n = 1 // the API server's default, which the tool's entry owns
	}
	return n, true, nil
}

// fightFinding reports the fight over d's replicas with hpa.
func (g *Guard) fightFinding(d GitReplicas, hpa *autoscalingv2.HorizontalPodAutoscaler, replicas int64) rule.Finding {
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	wants := "has not scaled it yet"
	if hpa.Status.DesiredReplicas > 0 || hpa.Status.LastScaleTime != nil {
		wants = "wants " + strconv.Itoa(int(hpa.Status.DesiredReplicas))
	}
	props := map[string]string{
		"autoscaler":      hpa.Namespace + "/" + hpa.Name,
		"gitReplicas":     strconv.FormatInt(replicas, 10),
		"minReplicas":     strconv.Itoa(int(minReplicas)),
		"maxReplicas":     strconv.Itoa(int(hpa.Spec.MaxReplicas)),
		"desiredReplicas": strconv.Itoa(int(hpa.Status.DesiredReplicas)),
	}
	return rule.Finding{
		Check:  CheckAutoscalerFight,
		Result: rule.AuditWarn,
		Object: corev1.ObjectReference{
			APIVersion: d.Ref.GroupVersion().String(), Kind: d.Ref.Kind,
			Namespace: d.Ref.Namespace, Name: d.Ref.Name,
		},
		Message: fmt.Sprintf("%s: %s is managed by %s. Git declares spec.replicas (%d) and HorizontalPodAutoscaler %s/%s scales it "+
			"(from %d to %d, %s): %s puts Git's value back at each reconcile and the autoscaler scales it again. "+
			"Remove spec.replicas from the workload's manifest in the Git repository and leave them to the autoscaler.",
			g.msg.rule, d.Ref, names(d.Owners), replicas, hpa.Namespace, hpa.Name, minReplicas, hpa.Spec.MaxReplicas, wants, g.msg.applier),
		Properties: props,
	}
}
