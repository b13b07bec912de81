package fluxguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// The webhooks' indexes in Spec().Webhooks.
const (
	kustomizeWebhook         = 0
	kustomizeAccountsWebhook = 1
	helmWebhook              = 2
	scaleWebhook             = 4
)

func TestSpecRegistration(t *testing.T) {
	spec := New(Config{}, breakGlass).Spec()
	objectRules := gitopstest.ObjectRules()
	labelled := gitopstest.Labelled
	// A label selector cannot say "either label", so Kustomizations' and
	// HelmReleases' objects have a webhook each, split by writer: people's
	// edits fail closed, service accounts' (the cluster's machinery) open.
	want := []gitopstest.Registration{
		{
			Name: "fluxguard.steward.dev", Path: "/validate/fluxguard",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
			ObjectSelector: labelled("kustomize.toolkit.fluxcd.io/name"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		{
			Name: "fluxguard-serviceaccounts.steward.dev", Path: "/validate/fluxguard/serviceaccounts",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 3,
			ObjectSelector: labelled("kustomize.toolkit.fluxcd.io/name"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		{
			Name: "fluxguard-helm.steward.dev", Path: "/validate/fluxguard/helm",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
			ObjectSelector: labelled("helm.toolkit.fluxcd.io/name"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		{
			Name: "fluxguard-helm-serviceaccounts.steward.dev", Path: "/validate/fluxguard/helm-serviceaccounts",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 3,
			ObjectSelector: labelled("helm.toolkit.fluxcd.io/name"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		{
			// What source-watcher's ArtifactGenerators generate carries their
			// UID in a label of its own.
			Name: "fluxguard-generator.steward.dev", Path: "/validate/fluxguard/generator",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 3,
			ObjectSelector: labelled("source.extensions.fluxcd.io/generator"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		{
			Name: "fluxguard-generator-serviceaccounts.steward.dev", Path: "/validate/fluxguard/generator-serviceaccounts",
			Rules: objectRules, FailurePolicy: admissionregistrationv1.Ignore, TimeoutSeconds: 3,
			ObjectSelector: labelled("source.extensions.fluxcd.io/generator"),
			Conditions:     []string{"not-flux-controller-lease-or-event"},
		},
		// A Scale has no labels to select on, so this webhook sees every
		// scale request, the HorizontalPodAutoscaler's included: it fails
		// open.
		gitopstest.ScaleRegistration("fluxguard-scale.steward.dev", "/validate/fluxguard/scale", "not-flux-agent-autoscaler-or-kubernetes-controller"),
		// Flux's records of what it applied, the owners' inventories, are
		// written by Flux alone.
		gitopstest.RecordRegistration("fluxguard-records.steward.dev", "/validate/fluxguard/records",
			gitopstest.UpdateRule("kustomize.toolkit.fluxcd.io", "kustomizations/status"),
			gitopstest.UpdateRule("helm.toolkit.fluxcd.io", "helmreleases/status"),
			gitopstest.UpdateRule("source.extensions.fluxcd.io", "artifactgenerators/status"),
		),
	}
	gitopstest.CheckSpec(t, spec, Name, want)
}

func TestPolicyRules(t *testing.T) {
	got := New(Config{}, "").Spec().RBAC
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"helm.toolkit.fluxcd.io"}, Resources: []string{"helmreleases"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"source.extensions.fluxcd.io"}, Resources: []string{"artifactgenerators"}, Verbs: []string{"list", "watch"}},
	}
	want = append(want, gitopstest.AuditRules()...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Spec().RBAC: want list and watch (the owners' cache) on Kustomizations, HelmReleases and ArtifactGenerators, get (a scale request's check of who declares the replicas) and list (the drift audit) on the scalable workloads, and list of the autoscalers (the fight check's), nothing more; -want, +got:\n%s", diff)
	}
}

func TestMatchConditionsCompile(t *testing.T) {
	// Configured names are rendered into CEL; quotes and backslashes must
	// be escaped.
	celtest.CheckCompile(t, New(Config{Settings: gitops.Settings{AgentUsers: []string{`odd"name\`, kustomizeController}, AgentGroups: []string{`flux'ops`}}}, "").Spec().Webhooks)
	celtest.CheckCompile(t, New(Config{Settings: gitops.Settings{AgentUsers: []string{}, AgentGroups: []string{}}}, "").Spec().Webhooks)
}

// TestFluxControllersAreNeverSent runs every kind of write Flux's
// controllers make through the webhooks' matchConditions: none may reach
// Steward, so Flux's reconciles cost no webhook call and keep working
// while Steward is down.
func TestFluxControllersAreNeverSent(t *testing.T) {
	webhooks := New(Config{}, breakGlass).Spec().Webhooks
	helmObject := deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"))
	var requests []admission.Request
	for _, user := range []string{kustomizeController, helmController} {
		as := func(r *admissiontest.Request) admission.Request {
			return r.User(user, "system:serviceaccounts", "system:serviceaccounts:flux-system", "system:authenticated").Build()
		}
		for _, o := range []map[string]any{obj(podinfoDeployment), helmObject} {
			requests = append(requests,
				as(admissiontest.Create(deploymentsGVR, "Deployment", o)),
				as(admissiontest.Update(deploymentsGVR, "Deployment", o, newImage())),
				as(admissiontest.Delete(deploymentsGVR, "Deployment", o)),
				// Stripping labels through status: still Flux's own write.
				as(admissiontest.Update(deploymentsGVR, "Deployment", o, obj(podinfoDeployment, del("metadata", "labels"))).SubResource("status")),
			)
		}
		requests = append(requests, as(scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5)))
	}
	calls := 0
	for _, wh := range webhooks {
		for _, req := range requests {
			sent, err := celtest.Sent(wh.MatchConditions, req)
			if err != nil {
				t.Fatalf("%s: matchConditions fail (the failure policy would apply): %v", wh.Name, err)
			}
			if sent {
				calls++
				t.Errorf("%s sends %s's %s %s", wh.Name, req.UserInfo.Username, req.Operation, req.SubResource)
			}
		}
	}
	if calls != 0 {
		t.Errorf("%d of %d requests of Flux's controllers would call Steward, want 0", calls, len(requests)*len(webhooks))
	}
}

func TestMatchConditions(t *testing.T) {
	webhooks := New(Config{}, breakGlass).Spec().Webhooks
	update := admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage())
	cases := map[string]celtest.Case{
		"HumanUpdateIsSent": {
			Reason:  "A person editing a Flux-labelled object reaches Steward.",
			Request: update.Build(), Sent: true,
		},
		"HumanUpdateIsSentToTheHelmWebhook": {
			Reason:  "The same holds for the HelmRelease webhook.",
			Webhook: helmWebhook,
			Request: admissiontest.Update(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo")),
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), image(0, "nginx:1.27"))).Build(),
			Sent: true,
		},
		"TenantServiceAccountIsSent": {
			Reason:  "A tenant's service account is not excluded: whether it writes for the object's owner takes the owners' cache. It goes to the entry that fails open.",
			Webhook: kustomizeAccountsWebhook,
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).User("system:serviceaccount:team-a:flux-reconciler", "system:serviceaccounts").Build(),
			Sent:    true,
		},
		"AServiceAccountIsNotSentToThePeoplesEntry": {
			Reason:  "People's entry fails closed: no service account's write may wait on it.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).User("system:serviceaccount:cert-manager:cert-manager-cainjector", "system:serviceaccounts").Build(),
			Sent:    false,
		},
		"APersonIsNotSentToTheServiceAccountsEntry": {
			Reason:  "The entry that fails open never receives people's writes.",
			Webhook: kustomizeAccountsWebhook,
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build(),
			Sent:    false,
		},
		"SourceControllerIsNotSent": {
			Reason:  "source-controller's finalizers on the sources a Kustomization applies never wait for Steward.",
			Webhook: kustomizeAccountsWebhook,
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).User("system:serviceaccount:flux-system:source-controller", "system:serviceaccounts").Build(),
			Sent:    false,
		},
		"UserWithoutGroupsIsSent": {
			Reason:  "A request without groups does not break the group clauses.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).User("jane").Build(),
			Sent:    true,
		},
		"StatusKeepingMetadataIsNotSent": {
			Reason: "A status write that leaves labels, annotations and owner references as they were never calls Steward.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set(1, "status", "readyReplicas"))).SubResource("status").Build(),
			Sent: false,
		},
		"StatusStrippingALabelIsSent": {
			Reason: "A status write that changes the labels reaches Steward.",
			Request: admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationName))).SubResource("status").Build(),
			Sent: true,
		},
		"GarbageCollectorIsNotSent": {
			Reason:  "Kubernetes' controllers never call Steward.",
			Request: admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).User("system:serviceaccount:kube-system:generic-garbage-collector").Build(),
			Sent:    false,
		},
		"LeasesAreNotSent": {
			Reason:  "Leases are never intercepted, even labelled.",
			Request: admissiontest.Update(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "Lease", configMap("apps", "l", "flux-system/apps"), configMap("apps", "l", "flux-system/apps")).Build(),
			Sent:    false,
		},
		"HumanScaleIsSent": {
			Reason:  "The scale webhook sends people's scale requests.",
			Webhook: scaleWebhook,
			Request: scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build(),
			Sent:    true,
		},
		"HPAScaleIsNotSent": {
			Reason:  "The HorizontalPodAutoscaler's scale never reaches Steward: Flux keeps its replicas where Git declares none.",
			Webhook: scaleWebhook,
			Request: scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).User("system:serviceaccount:kube-system:horizontal-pod-autoscaler", "system:serviceaccounts").Build(),
			Sent:    false,
		},
		"KEDAScaleIsNotSent": {
			Reason:  "Nor does KEDA's operator's, which scales to and from zero.",
			Webhook: scaleWebhook,
			Request: scaleRequest(deploymentsGVR, "apps", "podinfo", 0, 1).User("system:serviceaccount:keda:keda-operator", "system:serviceaccounts").Build(),
			Sent:    false,
		},
	}
	celtest.CheckCases(t, webhooks, cases)
	// Every request the rule refuses must reach it.
	for i, req := range map[int]admission.Request{kustomizeWebhook: update.Build(), scaleWebhook: scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()} {
		got := defaultRule().Handle(t.Context(), rule.NewRequest(req))
		if got.Allowed {
			t.Fatalf("fixture no longer refused: %v", got.Result)
		}
		celtest.RequireSent(t, webhooks[i], req, got.Result.Message)
	}
}
