package fleetguard

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

func TestSpecRegistration(t *testing.T) {
	spec := New(Config{}, "steward:break-glass").Spec()
	objectRules := gitopstest.ObjectRules()
	labelled := gitopstest.Labelled("objectset.rio.cattle.io/hash")
	want := []gitopstest.Registration{
		{
			Name: "fleetguard.steward.dev", Path: "/validate/fleetguard",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
			ObjectSelector: labelled, Conditions: []string{"not-agent-controller-lease-event-or-owned"},
		},
		{
			// People's writes fail closed; the cluster's machinery's open.
			Name: "fleetguard-serviceaccounts.steward.dev", Path: "/validate/fleetguard/serviceaccounts",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 3,
			ObjectSelector: labelled, Conditions: []string{"not-agent-controller-lease-event-or-owned"},
		},
		gitopstest.ScaleRegistration("fleetguard-scale.steward.dev", "/validate/fleetguard/scale", "not-fleet-agent-autoscaler-or-kubernetes-controller"),
	}
	gitopstest.CheckSpec(t, spec, Name, want)
}

func TestSpecWithoutAgentListsHasNoEmptyConditions(t *testing.T) {
	spec := New(Config{Settings: gitops.Settings{AgentUsers: []string{}, AgentGroups: []string{}}}, "").Spec()
	for _, wh := range spec.Webhooks {
		for _, c := range wh.MatchConditions {
			if strings.Contains(c.Expression, "[]") || strings.Contains(c.Expression, "cattle-fleet") {
				t.Errorf("%s: empty identity lists must render no clause, got %s", wh.Name, c.Expression)
			}
		}
	}
}

// TestMatchConditions evaluates the rendered CEL expressions with cel-go on
// requests shaped like the API server's. true means "call Steward". The
// e2e tests run the same expressions in a real API server.
func TestMatchConditions(t *testing.T) {
	r := New(Config{Settings: gitops.Settings{AgentUsers: []string{`odd"name\`, fleetAgent}}}, "steward:break-glass")
	env, err := cel.NewEnv(
		cel.Variable("request", cel.DynType),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
	)
	if err != nil {
		t.Fatal(err)
	}
	labelled := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{LabelHash: "abc"}}}
	withOwner := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationOwnerGVK: "v1, Kind=Namespace"}}}
	request := func(user string, groups []string, group, resource string) map[string]any {
		ui := map[string]any{"username": user}
		if groups != nil {
			ui["groups"] = groups
		}
		return map[string]any{"userInfo": ui, "resource": map[string]any{"group": group, "version": "v1", "resource": resource}}
	}
	status := func(req map[string]any) map[string]any {
		out := maps.Clone(req)
		out["subResource"] = "status"
		return out
	}
	withMeta := func(key string, v any) map[string]any {
		md := map[string]any{"name": "web", "labels": map[string]any{LabelHash: "abc"}}
		md[key] = v
		return map[string]any{"metadata": md}
	}
	jane := request("jane", []string{"system:authenticated"}, "apps", "deployments")
	cases := map[string]struct {
		reason    string
		webhook   int
		request   map[string]any
		object    any
		oldObject any
		want      bool
	}{
		"HumanUpdateIsSent":              {reason: "A person editing a labelled object reaches Steward.", request: jane, object: labelled, oldObject: labelled, want: true},
		"UserWithoutGroupsIsSent":        {reason: "A request without groups does not break the group conditions.", request: request("jane", nil, "apps", "deployments"), object: labelled, want: true},
		"AgentIsNotSent":                 {reason: "The agent's writes never call Steward.", request: request(fleetAgent, []string{"system:serviceaccounts"}, "apps", "deployments"), object: labelled, want: false},
		"QuotedUserIsNotSent":            {reason: "Configured names are quoted safely.", request: request(`odd"name\`, nil, "apps", "deployments"), object: labelled, want: false},
		"AgentNamespaceGroupIsNotSent":   {reason: "Service accounts of the agent namespace, which Fleet impersonates, never call Steward.", request: request("system:serviceaccount:cattle-fleet-system:fleet-default", []string{"system:serviceaccounts:cattle-fleet-system"}, "apps", "deployments"), object: labelled, want: false},
		"GarbageCollectorIsNotSent":      {reason: "Kubernetes' controllers never call Steward, so an outage cannot block them.", request: request(garbageCollectr, nil, "apps", "deployments"), oldObject: labelled, want: false},
		"NamespaceControllerIsNotSent":   {reason: "Namespace deletion never waits for Steward.", request: request("system:serviceaccount:kube-system:namespace-controller", nil, "", "configmaps"), oldObject: labelled, want: false},
		"KubeletIsNotSent":               {reason: "Kubelets never call Steward.", request: request("system:node:n1", []string{"system:nodes"}, "", "pods"), oldObject: labelled, want: false},
		"LeasesAreNotSent":               {reason: "Leases are never intercepted.", request: request("jane", nil, "coordination.k8s.io", "leases"), object: labelled, want: false},
		"EventsAreNotSent":               {reason: "Events are never intercepted.", request: request("jane", nil, "events.k8s.io", "events"), object: labelled, want: false},
		"CoreEventsAreNotSent":           {reason: "Core Events are never intercepted.", request: request("jane", nil, "", "events"), object: labelled, want: false},
		"ReviewsAreNotSent":              {reason: "TokenReviews and SubjectAccessReviews are never intercepted.", request: request("jane", nil, "authorization.k8s.io", "subjectaccessreviews"), object: labelled, want: false},
		"AppliedWithOwnerIsNotSent":      {reason: "Objects Rancher or Fleet's controller apply with an owner never call Steward.", request: jane, object: withOwner, oldObject: withOwner, want: false},
		"DeleteAppliedWithOwnerNotSent":  {reason: "On DELETE only the old object counts.", request: jane, oldObject: withOwner, want: false},
		"RemovingOwnerIsSent":            {reason: "An update that drops the owner annotation reaches Steward.", request: jane, object: labelled, oldObject: withOwner, want: true},
		"AddingOwnerIsSent":              {reason: "An update that adds the owner annotation to a bundle's object reaches Steward.", request: jane, object: withOwner, oldObject: labelled, want: true},
		"StatusKeepingMetadataIsNotSent": {reason: "A status write that leaves labels, annotations and owners alone never calls Steward.", request: status(jane), object: labelled, oldObject: labelled, want: false},
		"StatusChangingALabelIsSent":     {reason: "A status write that changes a label reaches Steward.", request: status(jane), object: withMeta("labels", map[string]any{}), oldObject: labelled, want: true},
		"StatusAddingAnnotationsIsSent":  {reason: "A status write that adds annotations reaches Steward.", request: status(jane), object: withOwner, oldObject: labelled, want: true},
		"StatusAddingAnOwnerIsSent":      {reason: "A status write that adds an owner reference reaches Steward.", request: status(jane), object: withMeta("ownerReferences", []any{map[string]any{"uid": "1"}}), oldObject: labelled, want: true},
		"StatusByTheAgentIsNotSent":      {reason: "The agent's status writes never call Steward.", request: status(request(fleetAgent, nil, "apps", "deployments")), object: withMeta("labels", map[string]any{}), oldObject: labelled, want: false},
		"HumanScaleIsSent":               {reason: "The scale webhook sends people's scale requests.", webhook: 2, request: jane, object: map[string]any{"metadata": map[string]any{}}, want: true},
		"HPAScaleIsNotSent":              {reason: "The HorizontalPodAutoscaler's scale never reaches Steward: Fleet keeps its replicas where the chart declares none.", webhook: 2, request: request(hpaController, []string{"system:serviceaccounts"}, "apps", "deployments"), want: false},
		"AgentScaleIsNotSent":            {reason: "The agent's scale requests never call Steward.", webhook: 2, request: request(fleetAgent, nil, "apps", "deployments"), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vars := map[string]any{"request": tc.request, "object": tc.object, "oldObject": tc.oldObject}
			got := true
			for _, c := range r.Spec().Webhooks[tc.webhook].MatchConditions {
				ast, iss := env.Compile(c.Expression)
				if iss.Err() != nil {
					t.Fatalf("condition %s does not compile: %v", c.Name, iss.Err())
				}
				prg, err := env.Program(ast)
				if err != nil {
					t.Fatal(err)
				}
				out, _, err := prg.Eval(vars)
				if err != nil {
					t.Fatalf("%s\ncondition %s fails to evaluate (a failing condition applies the failure policy): %v", tc.reason, c.Name, err)
				}
				got = got && out.Value().(bool)
			}
			if got != tc.want {
				t.Errorf("%s\nmatchConditions = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

func TestPolicyRules(t *testing.T) {
	got := New(Config{}, "").Spec().RBAC
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "replicasets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"replicationcontrollers"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec().RBAC: want list and watch (the cache's verbs) on the scalable workloads, get of their replicas and list of the autoscalers (the fight check's), nothing more; -want, +got:\n%s", diff)
	}
}

func TestCacheHoldsOnlyFleetManagedWorkloads(t *testing.T) {
	scopes := New(Config{}, "steward:break-glass").CacheByObject()
	if len(scopes) != len(gitops.ScaledKinds()) {
		t.Fatalf("%d cache scopes, want one per scaled kind (%d)", len(scopes), len(gitops.ScaledKinds()))
	}
	managed := labels.Set{LabelHash: "3e4c9a2f", "app": "web"}
	unmanaged := labels.Set{"app": "web"}
	for obj, scope := range scopes {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok || gvk.Kind == "" {
			t.Errorf("scope for %T %v: want a metadata-only object with its kind set", obj, gvk)
		}
		if scope.Label == nil || !scope.Label.Matches(managed) || scope.Label.Matches(unmanaged) {
			t.Errorf("%s: selector %v must match only objects labelled %s", gvk.Kind, scope.Label, LabelHash)
		}
	}
}
