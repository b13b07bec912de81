package fluxguard

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// How the denials name the owners and what Flux does with a hand edit.
const (
	appsOwner = "Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps/prod, revision main@sha1:1a2b3c4)"
	appsHint  = "to pause Flux, suspend Kustomization flux-system/apps (flux suspend)"
	emergency = "; in an emergency repeat the request as a member of steward:break-glass."
	// podinfoManagedBy is the first sentence of a denial about the
	// podinfo Deployment.
	podinfoManagedBy = "fluxguard: Deployment apps/podinfo is managed by " + appsOwner + "; it is reverted at the next reconcile (interval 10m)."
	inGit            = " Change it in the Git repository instead; " + appsHint + emergency

	podinfoHR      = "Flux HelmRelease podinfo/podinfo (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1)"
	promStackOwner = "Flux HelmRelease flux-system/kube-prometheus-stack (chart from OCIRepository flux-system/kube-prometheus-stack, revision 66.2.1)"
	platformOwner  = "Flux Kustomization flux-system/platform (GitRepository flux-system/flux-system, path ./platform, revision main@sha1:1a2b3c4)"
	platformInGit  = " Change it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/platform (flux suspend)" + emergency
)

func defaultRule() *Rule { return withConfig(Config{}) }

func withConfig(c Config) *Rule { return New(c, breakGlass).WithOwners(fluxOwners) }

// optOutRule lets members of platform-admins add Flux's opt-out markers.
func optOutRule() *Rule { return withConfig(Config{OptOutGroups: []string{"platform-admins"}}) }

// newImage is the podinfo Deployment with a new image: the hand edit
// most cases make.
func newImage(edits ...func(map[string]any)) map[string]any {
	return obj(podinfoDeployment, append(edits, image(0, "ghcr.io/stefanprodan/podinfo:6.8.0"))...)
}

func TestHandle(t *testing.T) {
	type args struct {
		rule *Rule
		req  admission.Request
	}
	cases := map[string]struct {
		reason string
		args   args
		want   admission.Response
	}{
		// Who writes.
		"KustomizeControllerUpdateIsAllowed": {
			reason: "kustomize-controller applies from Git; its writes are the desired state.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User(kustomizeController, "system:serviceaccounts", "system:serviceaccounts:flux-system").Build()},
			want: admission.Allowed("written by a Flux controller"),
		},
		"HelmControllerDeleteIsAllowed": {
			reason: "helm-controller uninstalls releases; its deletes are Flux's.",
			args: args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"))).
				User(helmController).Build()},
			want: admission.Allowed("written by a Flux controller"),
		},
		"GarbageCollectorIsAllowed": {
			reason: "Kubernetes' controllers are trusted as in every GitOps guard.",
			args: args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).
				User("system:serviceaccount:kube-system:generic-garbage-collector").Build()},
			want: admission.Allowed("written by a Kubernetes controller"),
		},
		"HumanImageChangeIsDenied": {
			reason: "A hand edit of an object a Kustomization lists is refused in one line: the owner and its source, what Flux does, the path, and the ways out.",
			args:   args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()},
			want: admission.Denied("fluxguard: Deployment apps/podinfo is managed by Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps/prod, revision main@sha1:1a2b3c4); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/apps (flux suspend); in an emergency repeat the request as a member of steward:break-glass."),
		},
		"ClusterScopedRBACNameIsMatchedWithItsColonTranscoded": {
			reason: "Flux writes ':' in RBAC names as '__' in inventory ids; a ClusterRole named podinfo:reader must still be found, without a namespace.",
			args: args{defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole",
				configMap("", "podinfo:reader", "flux-system/apps", set("ClusterRole", "kind"), set("rbac.authorization.k8s.io/v1", "apiVersion"), del("data"))).Build()},
			want: admission.Denied("fluxguard: ClusterRole podinfo:reader is managed by " + appsOwner + "; it is reverted at the next reconcile (interval 10m). Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + appsHint + emergency),
		},

		// The cross-check with the owner's record.
		"LabelledButNotInInventoryIsAllowed": {
			reason: "Labels alone prove nothing: an object the Kustomization does not list (pruning off, removed from Git, or labelled by hand) is not Flux's.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("apps", "legacy", "flux-system/apps"),
				deployment("apps", "legacy", "flux-system/apps", image(0, "nginx:1.27"))).Build()},
			want: admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"SameNameOtherKindIsNotListed": {
			reason: "Inventory ids include group and kind: the podinfo Service is listed, a podinfo Secret is not.",
			args: args{defaultRule(), admissiontest.Update(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret",
				configMap("apps", "podinfo", "flux-system/apps", set("Secret", "kind")), configMap("apps", "podinfo", "flux-system/apps", set("Secret", "kind"), set("debug", "data", "LOG_LEVEL"))).Build()},
			want: admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"OwnerWithoutInventoryYetIsAllowed": {
			reason: "A Kustomization that has not applied anything lists nothing.",
			args:   args{defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap", configMap("apps", "settings", "flux-system/fresh")).Build()},
			want:   admission.Allowed("Flux Kustomization flux-system/fresh has no inventory yet: it has not applied the object"),
		},
		"OwnerNotFoundIsAllowed": {
			reason: "Labels naming a Kustomization that does not exist: nothing reverts the object.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("apps", "podinfo", "flux-system/gone"),
				deployment("apps", "podinfo", "flux-system/gone", image(0, "nginx:1.27"))).Build()},
			want: admission.Allowed("owner not found: Flux Kustomization flux-system/gone does not exist, so no Flux controller reverts the object"),
		},
		"IncompleteLabelsAreAllowed": {
			reason: "Flux always sets name and namespace; a lone name label claims nothing.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationNamespace))).Build()},
			want:   admission.Allowed("Flux's labels are incomplete (Flux sets both name and namespace): no Flux owner claims the object"),
		},
		"CacheThatCannotAnswerIsAnError": {
			reason: "An owner cache that has not synced cannot tell; the failure policy (Fail) decides, never a guess.",
			args: args{New(Config{}, breakGlass).WithOwners(fakeOwners{err: errors.New("fluxguard: informer for kustomize.toolkit.fluxcd.io/v1, Resource=kustomizations has not synced")}),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()},
			want: admission.Errored(http.StatusServiceUnavailable, errors.New("looking up Flux Kustomization flux-system/apps: fluxguard: informer for kustomize.toolkit.fluxcd.io/v1, Resource=kustomizations has not synced")),
		},
		"RuleWithoutCacheFindsNoOwner": {
			reason: "Until the rule is set up no owner exists, so nothing is refused.",
			args:   args{New(Config{}, breakGlass), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build()},
			want:   admission.Allowed("owner not found: Flux Kustomization flux-system/apps does not exist, so no Flux controller reverts the object"),
		},

		// Tenants.
		"TenantServiceAccountOfTheOwnerIsAllowed": {
			reason: "kustomize-controller applies a tenant's Kustomization as its spec.serviceAccountName; those writes are Flux's.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend"),
				deployment("team-a", "web", "team-a/frontend", image(0, "nginx:1.27"))).User("system:serviceaccount:team-a:flux-reconciler", "system:serviceaccounts", "system:serviceaccounts:team-a").Build()},
			want: admission.Allowed("written by system:serviceaccount:team-a:flux-reconciler, which writes for Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4)"),
		},
		"TenantServiceAccountOfAnotherKustomizationIsDenied": {
			reason: "One tenant's service account may not edit another tenant's objects.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend"),
				deployment("team-a", "web", "team-a/frontend", image(0, "nginx:1.27"))).User("system:serviceaccount:team-b:flux-reconciler", "system:serviceaccounts", "system:serviceaccounts:team-b").Build()},
			want: admission.Denied("fluxguard: Deployment team-a/web is managed by Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Flux, suspend Kustomization team-a/frontend (flux suspend)" + emergency),
		},
		"DefaultServiceAccountWritesForOwnersWithoutOne": {
			reason: "With --default-service-account, kustomize-controller impersonates it for owners without spec.serviceAccountName, in their namespace.",
			args: args{withConfig(Config{DefaultServiceAccount: "flux-applier"}), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User("system:serviceaccount:flux-system:flux-applier").Build()},
			want: admission.Allowed("written by system:serviceaccount:flux-system:flux-applier, which writes for " + appsOwner),
		},
		"DefaultServiceAccountDoesNotWriteForOwnersWithTheirOwn": {
			reason: "An owner's own spec.serviceAccountName wins over the default, as in kustomize-controller.",
			args: args{withConfig(Config{DefaultServiceAccount: "flux-applier"}), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend")).
				User("system:serviceaccount:team-a:flux-applier").Build()},
			want: admission.Denied("fluxguard: Deployment team-a/web is managed by Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; to pause Flux, suspend Kustomization team-a/frontend (flux suspend)" + emergency),
		},
		"DefaultServiceAccountIsUnsetByDefault": {
			reason: "Flux sets no default service account, so without the setting none writes for the owner.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User("system:serviceaccount:flux-system:flux-applier").Build()},
			want: admission.Denied(podinfoManagedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},

		// Paused and opted-out.
		"SuspendedOwnerIsAllowedWithAWarning": {
			reason: "While its Kustomization is suspended nothing reverts an edit; it is allowed, and the warning says it stays until the owner resumes.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("monitoring", "grafana", "flux-system/monitoring"),
				deployment("monitoring", "grafana", "flux-system/monitoring", image(0, "grafana/grafana:11.3.0"))).Build()},
			want: admission.Allowed("Flux Kustomization flux-system/monitoring is suspended").WithWarnings(
				"fluxguard: Deployment monitoring/grafana is managed by Flux Kustomization flux-system/monitoring (GitRepository flux-system/flux-system, path ./monitoring, revision main@sha1:1a2b3c4), and Flux Kustomization flux-system/monitoring is suspended: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"ReconcileDisabledAnnotationIsAllowed": {
			reason: "kustomize-controller leaves an object annotated reconcile: disabled alone.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile)),
				newImage(set("disabled", "metadata", "annotations", MarkerReconcile))).Build()},
			want: admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"ReconcileDisabledLabelIsAllowed": {
			reason: "Flux honours its markers as labels too.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("disabled", "metadata", "labels", MarkerReconcile)),
				newImage(set("disabled", "metadata", "labels", MarkerReconcile))).Build()},
			want: admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"ReconcileDisabledInCapitalsIsAllowed": {
			reason: "Flux compares marker values without regard to case.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("DISABLED", "metadata", "annotations", MarkerReconcile))).Build()},
			want:   admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"SSAIgnoreIsAllowed": {
			reason: "kustomize-controller does not apply an object marked ssa: Ignore.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("Ignore", "metadata", "annotations", MarkerSSA)),
				newImage(set("Ignore", "metadata", "annotations", MarkerSSA))).Build()},
			want: admission.Allowed("kustomize.toolkit.fluxcd.io/ssa=Ignore: kustomize-controller leaves the object alone"),
		},
		"SSAIfNotPresentIsAllowed": {
			reason: "kustomize-controller only creates an object marked ssa: IfNotPresent.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("ifnotpresent", "metadata", "annotations", MarkerSSA)),
				newImage(set("ifnotpresent", "metadata", "annotations", MarkerSSA))).Build()},
			want: admission.Allowed("kustomize.toolkit.fluxcd.io/ssa=IfNotPresent: kustomize-controller only creates the object"),
		},
		"SSAMergeObjectsAreNeverStripped": {
			reason: "kustomize-controller skips its cleanup of kubectl's managers on ssa: Merge objects: a person's key is not in Git, but it is kept.",
			args: args{New(Config{Settings: gitops.Settings{UndeclaredFields: gitops.UndeclaredMirror}}, breakGlass).WithOwners(fluxOwners), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("apps", "podinfo-config", "flux-system/apps", set("Merge", "metadata", "labels", MarkerSSA)),
				configMap("apps", "podinfo-config", "flux-system/apps", set("Merge", "metadata", "labels", MarkerSSA), set("mine", "data", "extra"), patchedBy("kubectl-patch"))).Build()},
			want: admission.Allowed("jane changed only fields Git does not declare (/data/extra), as kubectl-patch: kustomize-controller keeps fields others set on an ssa: Merge object"),
		},
		"KubectlsFieldsAreStripped": {
			reason: "Elsewhere kustomize-controller strips what a kubectl manager wrote: refused even with mirror.",
			args: args{New(Config{Settings: gitops.Settings{UndeclaredFields: gitops.UndeclaredMirror}}, breakGlass).WithOwners(fluxOwners), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("apps", "podinfo-config", "flux-system/apps"),
				configMap("apps", "podinfo-config", "flux-system/apps", set("mine", "data", "extra"), patchedBy("kubectl-patch"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap apps/podinfo-config is managed by " + appsOwner + ". Changed: /data/extra, which Git does not declare, written by the field manager kubectl-patch: kustomize-controller removes what that manager writes at its next reconcile. Declare it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/apps (flux suspend); in an emergency repeat the request as a member of steward:break-glass."),
		},
		"SSAMergeIsGuarded": {
			reason: "ssa: Merge still applies Git's fields, so the object is guarded like any other.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("Merge", "metadata", "annotations", MarkerSSA)),
				newImage(set("Merge", "metadata", "annotations", MarkerSSA))).Build()},
			want: admission.Denied(podinfoManagedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AddingTheOptOutAsAnOptOutGroupMemberIsAllowed": {
			reason: "optOutGroups may take an object out of Flux's hands in the cluster, as a change of its own.",
			args: args{optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile))).User("alice", "platform-admins", "system:authenticated").Build()},
			want: admission.Allowed("opt-out /metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile set by alice, a member of an opt-out group"),
		},
		"AddingTheOptOutAsANonMemberIsDenied": {
			reason: "Anyone else adding the marker is refused; the hint names who may.",
			args: args{optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile))).Build()},
			want: admission.Denied(podinfoManagedBy + " Adding an opt-out (/metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile) is refused: it stops Flux from managing the object, and may be set by only members of platform-admins, as a change of its own. " +
				"Change it in the Git repository instead; to pause Flux for this object, a member of platform-admins can set kustomize.toolkit.fluxcd.io/reconcile=disabled" + emergency),
		},
		"AddingTheOptOutWithoutOptOutGroupsIsDenied": {
			reason: "With no opt-out group, opt-outs come from Git; the denial says nobody may add one.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("Ignore", "metadata", "labels", MarkerSSA))).User("alice", "platform-admins").Build()},
			want: admission.Denied(podinfoManagedBy + " Adding an opt-out (/metadata/labels/kustomize.toolkit.fluxcd.io~1ssa) is refused: it stops Flux from managing the object, and may be set by nobody: no opt-out group is configured." + inGit),
		},
		"AddingTheOptOutTogetherWithAnotherChangeIsDenied": {
			reason: "An opt-out smuggled in with the edit it would excuse is refused as an edit, even for a member.",
			args: args{optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				newImage(set("disabled", "metadata", "annotations", MarkerReconcile))).User("alice", "platform-admins").Build()},
			want: admission.Denied(podinfoManagedBy + " Changed: /metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile, /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux for this object, a member of platform-admins can set kustomize.toolkit.fluxcd.io/reconcile=disabled" + emergency),
		},

		// Ownership markers and owners.
		"StrippingOneLabelIsDenied": {
			reason: "Removing Flux's namespace label hides the object from Flux and from this guard.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationNamespace))).Build()},
			want: admission.Denied(podinfoManagedBy + " Removing Flux's ownership label kustomize.toolkit.fluxcd.io/namespace is refused: it would hide the object from Flux while it still runs as deployed from Git." + inGit),
		},
		"AddingAnOwnerReferenceIsDenied": {
			reason: "An owner reference lets the garbage collector delete the object outside Git.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "throwaway", "uid": "11111111-2222-3333-4444-555555555555"}}, "metadata", "ownerReferences"))).Build()},
			want: admission.Denied(podinfoManagedBy + " Adding the owner reference ConfigMap throwaway is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"SpoofedCreateIsDenied": {
			reason: "Only Flux's controllers create objects carrying Flux's labels.",
			args:   args{defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("apps", "fake", "flux-system/apps")).Build()},
			want: admission.Denied("fluxguard: ConfigMap apps/fake carries Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"UpdateGainingTheLabelsIsDenied": {
			reason: "Adding Flux's labels to an existing object is the same spoofing.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("apps", "mine", "x/y", del("metadata", "labels")),
				configMap("apps", "mine", "flux-system/apps")).Build()},
			want: admission.Denied("fluxguard: ConfigMap apps/mine would gain Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateByTheOwnersTenantIsAllowed": {
			reason: "A tenant's service account creates its Kustomization's objects, labels and all.",
			args: args{defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("team-a", "web-config", "team-a/frontend")).
				User("system:serviceaccount:team-a:flux-reconciler").Build()},
			want: admission.Allowed("written by system:serviceaccount:team-a:flux-reconciler, which writes for Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4)"),
		},
		"CreateByAnotherTenantIsDenied": {
			reason: "A tenant may not claim objects for another tenant's Kustomization.",
			args: args{defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("team-a", "web-config", "team-a/frontend")).
				User("system:serviceaccount:team-b:flux-reconciler").Build()},
			want: admission.Denied("fluxguard: ConfigMap team-a/web-config carries Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization team-a/frontend), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateWithoutLabelsIsAllowed": {
			reason: "Objects without Flux's labels are none of this rule's business.",
			args:   args{defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("apps", "mine", "x/y", del("metadata", "labels"))).Build()},
			want:   admission.Allowed(""),
		},
		"DeleteIsDenied": {
			reason: "Flux would re-create a deleted object at the next reconcile.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build()},
			want:   admission.Denied(podinfoManagedBy + " Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + appsHint + emergency),
		},
		"DeleteOfAnObjectThatLeftTheInventoryIsAllowed": {
			reason: "An object removed from Git with pruning off keeps its labels but leaves the inventory; cleaning it up by hand is expected.",
			args:   args{defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap", configMap("apps", "podinfo-old-config", "flux-system/apps")).Build()},
			want:   admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},

		// HelmReleases.
		"HelmReleaseWithInventoryIsDenied": {
			reason: "helm-controller 1.5 records an inventory, checked like a Kustomization's; drift detection on means the edit is reverted.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo")),
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), image(0, "nginx:1.27"))).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"HelmReleaseInventoryNotListingIsAllowed": {
			reason: "With an inventory the Helm annotations are not consulted: what it does not list is not Flux's.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo-canary", "x/y", helmLabelled("podinfo/podinfo"), release("podinfo", "podinfo"))).Build()},
			want:   admission.Allowed("Flux HelmRelease podinfo/podinfo does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"HelmReleaseWithoutInventoryMatchedByShortenedReleaseIsDenied": {
			reason: "Before Flux 2.8 the Helm release is the record; its name is shortened past 53 characters, and drift detection is off, so the change persists until the next upgrade.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("observability-monitoring-production", promStackRelease)),
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("observability-monitoring-production", promStackRelease), set("debug", "data", "LOG_LEVEL"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap observability-monitoring-production/grafana-dashboards is managed by " + promStackOwner +
				"; its drift detection is disabled, so the change would persist unseen until the next upgrade of the release overwrites it. Changed: /data/LOG_LEVEL. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease flux-system/kube-prometheus-stack (flux suspend)" + emergency),
		},
		"HelmReleaseWithoutInventoryUnshortenedReleaseIsAllowed": {
			reason: "The release name as written in the annotations must be the one helm-controller installs: the unshortened name is another release.",
			args: args{defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"),
					release("observability-monitoring-production", "observability-monitoring-production-kube-prometheus-stack"))).Build()},
			want: admission.Allowed(`Flux HelmRelease flux-system/kube-prometheus-stack installs Helm release observability-monitoring-production/` + promStackRelease +
				`, and the object belongs to release "observability-monitoring-production-kube-prometheus-stack" in "observability-monitoring-production": not Flux's`),
		},
		"HelmReleaseWithoutInventoryOtherNamespaceIsAllowed": {
			reason: "The release namespace is the targetNamespace, not the HelmRelease's.",
			args: args{defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("flux-system", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("flux-system", promStackRelease))).Build()},
			want: admission.Allowed(`Flux HelmRelease flux-system/kube-prometheus-stack installs Helm release observability-monitoring-production/` + promStackRelease +
				`, and the object belongs to release "` + promStackRelease + `" in "flux-system": not Flux's`),
		},
		"HelmReleaseDriftDetectionWarnSaysTheChangeIsReported": {
			reason: "In warn mode helm-controller reports drift and corrects nothing: the change persists, seen, until the next upgrade.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "warned", "x/y", helmLabelled("podinfo/warned"))).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/warned is managed by Flux HelmRelease podinfo/warned (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"its drift detection only warns, so the change would persist, reported as drift, until the next upgrade of the release overwrites it. Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/warned (flux suspend)" + emergency),
		},
		"DriftDetectionDisabledMarkerIsAllowed": {
			reason: "helm-controller does not correct an object marked driftDetection: disabled.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("Disabled", "metadata", "labels", MarkerDriftDetection)),
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("Disabled", "metadata", "labels", MarkerDriftDetection), image(0, "nginx:1.27"))).Build()},
			want: admission.Allowed("helm.toolkit.fluxcd.io/driftDetection=disabled: helm-controller does not correct the object"),
		},
		"KustomizeMarkerDoesNotOptOutOfAHelmRelease": {
			reason: "kustomize-controller's marker means nothing to helm-controller.",
			args: args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment",
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("disabled", "metadata", "annotations", MarkerReconcile))).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"TwoOwnersAreBothNamed": {
			reason: "An object listed by a Kustomization and labelled for a HelmRelease that lists it too has two owners; the denial names both.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace)),
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("debug", "data", "LOG_LEVEL"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap podinfo/podinfo-dashboards is managed by " + appsOwner + " and " + podinfoHR + "; it is reverted at the next reconcile (interval 10m). Changed: /data/LOG_LEVEL." + inGit),
		},

		"PathIgnoredByOnlyOneOfTwoOwnersIsDenied": {
			reason: "A change persists only if no owner reverts it: the HelmRelease ignores /spec/replicas, the Kustomization that lists the Deployment too does not.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				deployment("podinfo", "autoscaled", "flux-system/apps", set("autoscaled", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), admissiontest.AppliedBy("Update", "helm-controller")),
				deployment("podinfo", "autoscaled", "flux-system/apps", set("autoscaled", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), admissiontest.AppliedBy("Update", "helm-controller"), set(5, "spec", "replicas"))).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/autoscaled is managed by " + appsOwner + " and Flux HelmRelease podinfo/autoscaled (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas." + inGit),
		},
		"ScaleIgnoredByOnlyOneOfTwoOwnersIsDenied": {
			reason: "The same holds on the scale path, where both owners are found by their inventories.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "podinfo", "autoscaled", 2, 5).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/autoscaled is managed by " + appsOwner + " and Flux HelmRelease podinfo/autoscaled (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas." + inGit),
		},
		"OneOfTwoOwnersSuspendedIsDenied": {
			reason: "A suspended Kustomization does not revert the edit, but the HelmRelease that lists the object too does: the denial names only the owner that reverts.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace)),
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("debug", "data", "LOG_LEVEL"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap podinfo/grafana-dashboards is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /data/LOG_LEVEL. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"OneOfTwoOwnersOptedOutIsDenied": {
			reason: "reconcile: disabled stops kustomize-controller only; helm-controller still corrects the object.",
			args: args{defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace),
					set("disabled", "metadata", "annotations", MarkerReconcile))).Build()},
			want: admission.Denied("fluxguard: ConfigMap podinfo/podinfo-dashboards is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"BothOwnersSuspendedOrOptedOutIsAllowed": {
			reason: "When neither owner reverts the change, it is allowed; the opt-out is the reason.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("disabled", "metadata", "labels", MarkerDriftDetection)),
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("disabled", "metadata", "labels", MarkerDriftDetection), set("debug", "data", "LOG_LEVEL"))).Build()},
			want: admission.Allowed("helm.toolkit.fluxcd.io/driftDetection=disabled: helm-controller does not correct the object"),
		},

		// The owners' ignore rules.
		"IgnoredByKindTargetIsAllowed": {
			reason: "platform ignores /spec/replicas of Deployments (target kind).",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("platform", "gateway", "flux-system/platform"),
				deployment("platform", "gateway", "flux-system/platform", set(5, "spec", "replicas"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"KindTargetSelectsOnlyItsKind": {
			reason: "A rule targeting Deployments leaves the same path of a StatefulSet guarded.",
			args: args{defaultRule(), admissiontest.Update(statefulsetsGVR, "StatefulSet", deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind")),
				deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind"), set(5, "spec", "replicas"))).Build()},
			want: admission.Denied("fluxguard: StatefulSet platform/worker is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /spec/replicas." + platformInGit),
		},
		"IgnoredByNameRegexIsAllowed": {
			reason: "platform ignores /data/generated of ConfigMaps named cache-.*.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "cache-redis", "flux-system/platform"),
				configMap("platform", "cache-redis", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"NameRegexNotMatchingIsDenied": {
			reason: "The same path on a ConfigMap the name does not select is guarded.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "settings", "flux-system/platform"),
				configMap("platform", "settings", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap platform/settings is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /data/generated." + platformInGit),
		},
		"NameRegexIsAnchored": {
			reason: "Kustomize matches a target's name as a whole: cache-.* does not select old-cache-redis.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "old-cache-redis", "flux-system/platform"),
				configMap("platform", "old-cache-redis", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap platform/old-cache-redis is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /data/generated." + platformInGit),
		},
		"IgnoredByLabelSelectorIsAllowed": {
			reason: "platform ignores Istio's injection annotation on objects labelled part-of=mesh; the labels are read on the stored object.",
			args: args{defaultRule(), admissiontest.Update(servicesGVR, "Service",
				configMap("platform", "gateway", "flux-system/platform", set("Service", "kind"), del("data"), set("mesh", "metadata", "labels", "app.kubernetes.io/part-of")),
				configMap("platform", "gateway", "flux-system/platform", set("Service", "kind"), del("data"), set("mesh", "metadata", "labels", "app.kubernetes.io/part-of"), set("false", "metadata", "annotations", "sidecar.istio.io/inject"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"LabelSelectorNotMatchingIsDenied": {
			reason: "Without the label the annotation is guarded.",
			args: args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "settings", "flux-system/platform", injected),
				configMap("platform", "settings", "flux-system/platform", injected, set("false", "metadata", "annotations", "sidecar.istio.io/inject"))).Build()},
			want: admission.Denied("fluxguard: ConfigMap platform/settings is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /metadata/annotations/sidecar.istio.io~1inject." + platformInGit),
		},
		"IgnoredWithoutTargetIsAllowed": {
			reason: "A rule without a target applies to every object of the owner: kubectl rollout restart of a StatefulSet.",
			args: args{defaultRule(), admissiontest.Update(statefulsetsGVR, "StatefulSet", deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind")),
				deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind"), set("2026-11-27T10:00:00Z", "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredPathDoesNotCoverOtherChanges": {
			reason: "Ignoring /spec/replicas lets only that through.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("platform", "gateway", "flux-system/platform"),
				deployment("platform", "gateway", "flux-system/platform", set(5, "spec", "replicas"), image(0, "nginx:1.27"))).Build()},
			want: admission.Denied("fluxguard: Deployment platform/gateway is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /spec/template/spec/containers/0/image." + platformInGit),
		},
		"HelmReleaseDriftIgnoreIsAllowed": {
			reason: "A HelmRelease's spec.driftDetection.ignore works like a Kustomization's spec.ignore.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("podinfo", "autoscaled", "x/y", helmLabelled("podinfo/autoscaled")),
				deployment("podinfo", "autoscaled", "x/y", helmLabelled("podinfo/autoscaled"), set(7, "spec", "replicas"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"ConfiguredIgnoredFieldsAreAllowed": {
			reason: "ignoredFields add paths any owner's objects of a kind may change.",
			args: args{withConfig(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/spec/containers/0/image"}}}}}),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},

		// Control writes and subresources.
		"ReconcileRequestIsAllowed": {
			reason: "flux reconcile annotates the object; it changes nothing Flux deploys.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("2026-11-27T10:00:00Z", "metadata", "annotations", "reconcile.fluxcd.io/requestedAt"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"SuspendingAFluxManagedKustomizationIsAllowed": {
			reason: "flux suspend sets spec.suspend on a Kustomization its parent applies from Git: a control write, not an edit.",
			args: args{defaultRule(), admissiontest.Update(kustomizationsGVR, "Kustomization", obj(appsKustomization),
				obj(appsKustomization, set(true, "spec", "suspend"))).Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"EditingAFluxManagedKustomizationIsDenied": {
			reason: "Any other change of the Kustomization is an edit of what its parent applies.",
			args: args{defaultRule(), admissiontest.Update(kustomizationsGVR, "Kustomization", obj(appsKustomization),
				obj(appsKustomization, set("./apps/staging", "spec", "path"))).Build()},
			want: admission.Denied("fluxguard: Kustomization flux-system/apps is managed by Flux Kustomization flux-system/flux-system (GitRepository flux-system/flux-system, path ./clusters/prod, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Changed: /spec/path. Change it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/flux-system (flux suspend)" + emergency),
		},
		"SuspendOnOtherKindsIsAnEdit": {
			reason: "spec.suspend is a control write only on Flux's kinds; on a CronJob it changes what runs.",
			args: args{defaultRule(), admissiontest.Update(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, "CronJob",
				configMap("apps", "podinfo-cleanup", "flux-system/apps", set("CronJob", "kind"), del("data"), set(false, "spec", "suspend"), admissiontest.AppliedBy("Apply", "kustomize-controller")),
				configMap("apps", "podinfo-cleanup", "flux-system/apps", set("CronJob", "kind"), del("data"), set(false, "spec", "suspend"), admissiontest.AppliedBy("Apply", "kustomize-controller"), set(true, "spec", "suspend"))).Build()},
			want: admission.Denied("fluxguard: CronJob apps/podinfo-cleanup is managed by " + appsOwner + "; it is reverted at the next reconcile (interval 10m). Changed: /spec/suspend." + inGit),
		},
		"StatusWriteStrippingALabelIsDenied": {
			reason: "A status write stores the metadata it carries; stripping Flux's label there is refused like an edit.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationName), set(1, "status", "readyReplicas"))).SubResource("status").Build()},
			want: admission.Denied(podinfoManagedBy + " Removing Flux's ownership label kustomize.toolkit.fluxcd.io/name is refused: it would hide the object from Flux while it still runs as deployed from Git." + inGit),
		},
		"StatusOnlyWriteIsAllowed": {
			reason: "Status is never guarded.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set(1, "status", "readyReplicas"))).SubResource("status").Build()},
			want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},

		// The scale subresource.
		"ScaleOfAListedDeploymentIsDenied": {
			reason: "kubectl scale of a Deployment an inventory lists changes /spec/replicas; the owner is found by its inventory, since a Scale has no labels.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()},
			want:   admission.Denied(podinfoManagedBy + " Changed: /spec/replicas." + inGit),
		},
		"ScaleOfAnUnlistedDeploymentIsAllowed": {
			reason: "No inventory lists apps/legacy.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "apps", "legacy", 2, 5).Build()},
			want:   admission.Allowed(""),
		},
		"ScaleWithReplicasIgnoredByTheOwnerIsAllowed": {
			reason: "platform ignores /spec/replicas of its Deployments; the kind selector is read from the request.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "platform", "gateway", 2, 5).Build()},
			want:   admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleWithReplicasIgnoredByConfigIsAllowed": {
			reason: "ignoredFields apply on the scale path too.",
			args: args{withConfig(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}}}),
				scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()},
			want: admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleOfAHelmReleaseDeploymentIsDenied": {
			reason: "A HelmRelease's inventory is searched like a Kustomization's.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "podinfo", "podinfo", 2, 3).Build()},
			want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /spec/replicas. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"ScaleOfASuspendedOwnersDeploymentIsAllowed": {
			reason: "A suspended owner does not revert a scale either.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "monitoring", "grafana", 1, 2).Build()},
			want: admission.Allowed("Flux Kustomization flux-system/monitoring is suspended").WithWarnings(
				"fluxguard: Deployment monitoring/grafana is managed by Flux Kustomization flux-system/monitoring (GitRepository flux-system/flux-system, path ./monitoring, revision main@sha1:1a2b3c4), and Flux Kustomization flux-system/monitoring is suspended: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"ScaleByKustomizeControllerIsAllowed": {
			reason: "Flux's controllers are trusted on the scale path.",
			args:   args{defaultRule(), scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).User(kustomizeController).Build()},
			want:   admission.Allowed("written by a Flux controller"),
		},
		"ScaleWithCacheThatCannotAnswerIsAnError": {
			reason: "The scale webhook fails open (Ignore), but the handler still reports the error rather than guessing.",
			args: args{New(Config{}, breakGlass).WithOwners(fakeOwners{err: errors.New("fluxguard: waiting for API discovery")}),
				scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()},
			want: admission.Errored(http.StatusServiceUnavailable, errors.New("listing Flux owners: fluxguard: waiting for API discovery")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.args.rule.Handle(context.Background(), rule.NewRequest(tc.args.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// scaleRequest is an UPDATE of a workload's scale subresource, as the API
// server sends it: the Scale object, under the workload's resource.
func scaleRequest(gvr schema.GroupVersionResource, namespace, name string, from, to int) *admissiontest.Request {
	return admissiontest.Update(gvr, "Scale", scaleObject(namespace, name, from), scaleObject(namespace, name, to)).
		SubResource("scale").
		RequestKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, gvr.Resource)
}
