package argocdguard

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/rule"
)

func TestSpecRegistration(t *testing.T) {
	spec := New(Config{}, "steward:break-glass").Spec()
	objectRules := gitopstest.ObjectRules()
	want := []gitopstest.Registration{
		{
			Name: "argocdguard.steward.dev", Path: "/validate/argocdguard",
			Rules: objectRules,
			// An annotation selects the objects: no objectSelector, the
			// matchCondition does.
			FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
			Conditions: []string{"tracked-not-argocd-controller-lease-or-event"},
		},
		{
			// The same writes by service accounts, the cluster's machinery: an
			// outage must not stop them.
			Name: "argocdguard-serviceaccounts.steward.dev", Path: "/validate/argocdguard/serviceaccounts",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 3,
			Conditions: []string{"tracked-not-argocd-controller-lease-or-event"},
		},
		gitopstest.ScaleRegistration("argocdguard-scale.steward.dev", "/validate/argocdguard/scale", "not-argocd-agent-autoscaler-or-kubernetes-controller"),
		// Applications' status.resources, which the guard reads, written
		// with the object (Applications have no status subresource).
		gitopstest.RecordRegistration("argocdguard-records.steward.dev", "/validate/argocdguard/records",
			gitopstest.UpdateRule("argoproj.io", "applications"),
		),
	}
	gitopstest.CheckSpec(t, spec, Name, want)
}

func TestPolicyRules(t *testing.T) {
	got := New(Config{}, "").Spec().RBAC
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications", "appprojects"}, Verbs: []string{"list", "watch"}},
	}
	want = append(want, gitopstest.AuditRules()...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec().RBAC: want list and watch (the cache's verbs) on Applications and AppProjects, get (a scale's check of who declares the replicas) and list (the audit's) on the workloads, list of the autoscalers (the fight check's), nothing more; -want, +got:\n%s", diff)
	}
}

func TestMatchConditionsCompile(t *testing.T) {
	celtest.CheckCompile(t, New(Config{Settings: gitops.Settings{AgentUsers: []string{`odd"name\`}, AgentGroups: []string{`g"\`}}, ServerUsers: []string{`s"\`}, UIEditsAreGitOps: true}, "").Spec().Webhooks)
	celtest.CheckCompile(t, New(Config{TrackingLabel: "app.kubernetes.io/instance"}, "").Spec().Webhooks)
	celtest.CheckCompile(t, New(Config{Settings: gitops.Settings{AgentUsers: []string{}, AgentGroups: []string{}}}, "").Spec().Webhooks)
}

func TestSpecWithoutAgentListsHasNoEmptyConditions(t *testing.T) {
	spec := New(Config{Settings: gitops.Settings{AgentUsers: []string{}, AgentGroups: []string{}}}, "").Spec()
	for _, wh := range spec.Webhooks {
		for _, c := range wh.MatchConditions {
			if strings.Contains(c.Expression, "[]") || strings.Contains(c.Expression, "argocd-application-controller") {
				t.Errorf("%s: empty identity lists must render no clause, got %s", wh.Name, c.Expression)
			}
		}
	}
}

// matchConditionCase is a request and whether the API server sends it to
// argocdguard configured as Rule (the default when nil).
type matchConditionCase struct {
	celtest.Case
	Rule *Rule
	// Excluded marks requests kept away by design although the rule would
	// refuse them (Steward never intercepts Leases).
	Excluded bool
}

func matchConditionCases() map[string]matchConditionCase {
	web := func(edits ...func(map[string]any)) map[string]any { return obj(webDeployment, edits...) }
	untracked := web(del("metadata", "annotations", AnnotationTrackingID))
	bare := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "default"}}
	labelled := webConfig("web-config", "info")
	labelling := New(Config{TrackingLabel: "app.kubernetes.io/instance"}, "steward:break-glass").WithApplications(appsCache(obj(guestbookApp)))
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	lease := map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "web", "namespace": "default",
		"annotations": map[string]any{AnnotationTrackingID: "guestbook:coordination.k8s.io/Lease:default/web"}}, "spec": map[string]any{"holderIdentity": "a"}}
	leaseTaken := obj(`{}`, set(lease["metadata"], "metadata"), set(map[string]any{"holderIdentity": "b"}, "spec"))
	return map[string]matchConditionCase{
		"UntrackedObjectIsNotSent": {Case: celtest.Case{
			Reason:  "Most objects carry no tracking id: their writes never call Steward.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", untracked, obj(webDeployment, del("metadata", "annotations", AnnotationTrackingID), set(5, "spec", "replicas"))).Build(),
		}},
		"ObjectWithoutAnnotationsIsNotSent": {Case: celtest.Case{
			Reason:  "An object without annotations makes no condition fail.",
			Request: admissiontest.Create(configmapsGVR, "ConfigMap", bare).Build(),
		}},
		"ControllerWriteIsNotSent": {Case: celtest.Case{
			Reason:  "Argo CD's syncs never call Steward.",
			Request: imageChange().User(argoController, "system:serviceaccounts", "system:serviceaccounts:argocd").Build(),
		}},
		"ControllerDeleteIsNotSent": {Case: celtest.Case{
			Reason:  "Argo CD's prunes never call Steward.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", web()).User(argoController).Build(),
		}},
		"GarbageCollectorIsNotSent": {Case: celtest.Case{
			Reason:  "Kubernetes' controllers never call Steward.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", web()).User(garbageCollectr).Build(),
		}},
		"HumanWriteToATrackedObjectIsSent": {Case: celtest.Case{
			Reason:  "The writes the rule exists for reach it.",
			Request: imageChange().Build(), Sent: true,
		}},
		"ServerWriteIsSentByDefault": {Case: celtest.Case{
			Reason:  "argocd-server's UI edits are hand edits.",
			Request: imageChange().User(argoServer).Build(), Sent: true,
		}},
		"ServerWriteIsNotSentWhenUIEditsAreGitOps": {Rule: newRule(Config{UIEditsAreGitOps: true}, obj(guestbookApp)), Case: celtest.Case{
			Reason:  "Trusted UI edits never call Steward.",
			Request: imageChange().User(argoServer).Build(),
		}},
		"RemovingTheIDIsSent": {Case: celtest.Case{
			Reason:  "The old object carries the id: stripping it reaches the rule.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", web(), untracked).Build(), Sent: true,
		}},
		"AddingTheIDIsSent": {Case: celtest.Case{
			Reason:  "The new object carries the id: claiming an object reaches the rule.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", untracked, web()).Build(), Sent: true,
		}},
		"CreateWithTheIDIsSent": {Case: celtest.Case{
			Reason:  "A create carrying the id may be spoofing.",
			Request: admissiontest.Create(deploymentsGVR, "Deployment", web()).Build(), Sent: true,
		}},
		"DeleteOfATrackedObjectIsSent": {Case: celtest.Case{
			Reason:  "A DELETE has no object (null), only the old one.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", web()).Build(), Sent: true,
		}},
		"DeleteOfAnUntrackedObjectIsNotSent": {Case: celtest.Case{
			Reason:  "Deleting an object without the id never calls Steward.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", untracked).Build(),
		}},
		"StatusWriteKeepingMetadataIsNotSent": {Case: celtest.Case{
			Reason:  "Controllers' status writes never call Steward.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", web(), web(set(2, "status", "readyReplicas"))).SubResource("status").Build(),
		}},
		"StatusWriteAddingAnOwnerIsSent": {Case: celtest.Case{
			Reason:  "A status write that changes metadata reaches the rule.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", web(), web(set([]any{map[string]any{"kind": "ConfigMap", "name": "owner", "uid": "1"}}, "metadata", "ownerReferences"))).SubResource("status").Build(),
			Sent:    true,
		}},
		"TrackedLeaseIsNotSent": {Excluded: true, Case: celtest.Case{
			Reason:  "Steward never intercepts Leases, whatever they carry.",
			Request: admissiontest.Update(leases, "Lease", lease, leaseTaken).Build(),
		}},
		"LabelledObjectIsNotSentByDefault": {Case: celtest.Case{
			Reason:  "Without trackingLabel the instance label selects nothing.",
			Request: admissiontest.Update(configmapsGVR, "ConfigMap", labelled, webConfig("web-config", "debug")).Build(),
		}},
		"LabelledObjectIsSentWithTrackingLabel": {Rule: labelling, Case: celtest.Case{
			Reason:  "With trackingLabel, the label selects the object.",
			Request: admissiontest.Update(configmapsGVR, "ConfigMap", labelled, webConfig("web-config", "debug")).Build(), Sent: true,
		}},
		"CreateWithTheLabelIsSentWithTrackingLabel": {Rule: labelling, Case: celtest.Case{
			Reason:  "With trackingLabel, a create carrying the label may be spoofing.",
			Request: admissiontest.Create(configmapsGVR, "ConfigMap", labelled).Build(), Sent: true,
		}},
		"RemovingTheLabelIsSentWithTrackingLabel": {Rule: labelling, Case: celtest.Case{
			Reason:  "The old object's label selects an update that removes it.",
			Request: admissiontest.Update(configmapsGVR, "ConfigMap", labelled, obj(`{}`, set(map[string]any{"name": "web-config", "namespace": "default"}, "metadata"))).Build(), Sent: true,
		}},
		"UnlabelledObjectIsNotSentWithTrackingLabel": {Rule: labelling, Case: celtest.Case{
			Reason:  "The label clause does not send everything.",
			Request: admissiontest.Create(configmapsGVR, "ConfigMap", bare).Build(),
		}},
		"HumanRecordWriteIsSent": {Case: celtest.Case{
			Reason:  "The records webhook sends people's writes of Applications.",
			Webhook: 3, Request: admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp), obj(guestbookApp, set([]any{}, "status", "resources"))).Build(), Sent: true,
		}},
		"ControllerRecordWriteIsNotSent": {Case: celtest.Case{
			Reason:  "The application controller's status updates never call Steward.",
			Webhook: 3, Request: admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp), obj(guestbookApp, set([]any{}, "status", "resources"))).User(argoController).Build(),
		}},
		"HumanScaleIsSent": {Case: celtest.Case{
			Reason:  "The scale webhook sends people's scale requests.",
			Webhook: 2, Request: scaleRequest("web", 3, 5).Build(), Sent: true,
		}},
		"ControllerScaleIsNotSent": {Case: celtest.Case{
			Reason:  "Argo CD's own scale requests never call Steward.",
			Webhook: 2, Request: scaleRequest("web", 3, 5).User(argoController).Build(),
		}},
	}
}

// TestMatchConditions evaluates the rendered conditions as the API server
// does, and checks that each request they keep away is one the rule would
// allow anyway.
func TestMatchConditions(t *testing.T) {
	for name, tc := range matchConditionCases() {
		t.Run(name, func(t *testing.T) {
			r := tc.Rule
			if r == nil {
				r = defaultRule()
			}
			celtest.CheckCases(t, r.Spec().Webhooks, map[string]celtest.Case{name: tc.Case})
			if tc.Sent || tc.Excluded {
				return
			}
			got := r.Handle(context.Background(), rule.NewRequest(tc.Request))
			if !got.Allowed || len(got.Warnings) > 0 {
				t.Errorf("%s\nthe conditions keep away a request the rule acts on: %+v", tc.Reason, got.Result)
			}
		})
	}
}
