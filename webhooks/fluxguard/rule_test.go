package fluxguard

import (
	"errors"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
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
	cases := map[string]gitopstest.HandleCase{
		// Who writes.
		"KustomizeControllerUpdateIsAllowed": {
			Reason: "kustomize-controller applies from Git; its writes are the desired state.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User(kustomizeController, "system:serviceaccounts", "system:serviceaccounts:flux-system").Build()),
			Want: admission.Allowed("written by a Flux controller"),
		},
		"HelmControllerDeleteIsAllowed": {
			Reason: "helm-controller uninstalls releases; its deletes are Flux's.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"))).
				User(helmController).Build()),
			Want: admission.Allowed("written by a Flux controller"),
		},
		"GarbageCollectorIsAllowed": {
			Reason: "Kubernetes' controllers are trusted as in every GitOps guard.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).
				User("system:serviceaccount:kube-system:generic-garbage-collector").Build()),
			Want: admission.Allowed("written by a Kubernetes controller"),
		},
		"HumanImageChangeIsDenied": {
			Reason: "A hand edit of an object a Kustomization lists is refused in one line: the owner and its source, what Flux does, the path, and the ways out.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()),
			Want: admission.Denied("fluxguard: Deployment apps/podinfo is managed by Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps/prod, revision main@sha1:1a2b3c4); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/apps (flux suspend); in an emergency repeat the request as a member of steward:break-glass."),
		},
		"ClusterScopedRBACNameIsMatchedWithItsColonTranscoded": {
			Reason: "Flux writes ':' in RBAC names as '__' in inventory ids; a ClusterRole named podinfo:reader must still be found, without a namespace.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole",
				configMap("", "podinfo:reader", "flux-system/apps", set("ClusterRole", "kind"), set("rbac.authorization.k8s.io/v1", "apiVersion"), del("data"))).Build()),
			Want: admission.Denied("fluxguard: ClusterRole podinfo:reader is managed by " + appsOwner + "; it is reverted at the next reconcile (interval 10m). Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + appsHint + emergency),
		},

		// The cross-check with the owner's record.
		"LabelledButNotInInventoryIsAllowed": {
			Reason: "Labels alone prove nothing: an object the Kustomization does not list (pruning off, removed from Git, or labelled by hand) is not Flux's.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("apps", "legacy", "flux-system/apps"),
				deployment("apps", "legacy", "flux-system/apps", image(0, "nginx:1.27"))).Build()),
			Want: admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"SameNameOtherKindIsNotListed": {
			Reason: "Inventory ids include group and kind: the podinfo Service is listed, a podinfo Secret is not.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret",
				configMap("apps", "podinfo", "flux-system/apps", set("Secret", "kind")), configMap("apps", "podinfo", "flux-system/apps", set("Secret", "kind"), set("debug", "data", "LOG_LEVEL"))).Build()),
			Want: admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"OwnerWithoutInventoryYetIsAllowed": {
			Reason: "A Kustomization that has not applied anything lists nothing.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap", configMap("apps", "settings", "flux-system/fresh")).Build()),
			Want:   admission.Allowed("Flux Kustomization flux-system/fresh has no inventory yet: it has not applied the object"),
		},
		"OwnerNotFoundIsAllowed": {
			Reason: "Labels naming a Kustomization that does not exist: nothing reverts the object.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("apps", "podinfo", "flux-system/gone"),
				deployment("apps", "podinfo", "flux-system/gone", image(0, "nginx:1.27"))).Build()),
			Want: admission.Allowed("owner not found: Flux Kustomization flux-system/gone does not exist, so no Flux controller reverts the object"),
		},
		"IncompleteLabelsAreAllowed": {
			Reason: "Flux always sets name and namespace; a lone name label claims nothing.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationNamespace))).Build()),
			Want:   admission.Allowed("Flux's labels are incomplete (Flux sets both name and namespace): no Flux owner claims the object"),
		},
		"CacheThatCannotAnswerIsAnError": {
			Reason: "An owner cache that has not synced cannot tell; the failure policy (Fail) decides, never a guess.",
			Args: gitopstest.Send(New(Config{}, breakGlass).WithOwners(fakeOwners{err: errors.New("fluxguard: informer for kustomize.toolkit.fluxcd.io/v1, Resource=kustomizations has not synced")}),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()),
			Want: admission.Errored(http.StatusServiceUnavailable, errors.New("looking up Flux Kustomization flux-system/apps: fluxguard: informer for kustomize.toolkit.fluxcd.io/v1, Resource=kustomizations has not synced")),
		},
		"RuleWithoutCacheFindsNoOwner": {
			Reason: "Until the rule is set up no owner exists, so nothing is refused.",
			Args:   gitopstest.Send(New(Config{}, breakGlass), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build()),
			Want:   admission.Allowed("owner not found: Flux Kustomization flux-system/apps does not exist, so no Flux controller reverts the object"),
		},

		// Tenants.
		"TenantServiceAccountOfTheOwnerIsAllowed": {
			Reason: "kustomize-controller applies a tenant's Kustomization as its spec.serviceAccountName; those writes are Flux's.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend"),
				deployment("team-a", "web", "team-a/frontend", image(0, "nginx:1.27"))).User("system:serviceaccount:team-a:flux-reconciler", "system:serviceaccounts", "system:serviceaccounts:team-a").Build()),
			Want: admission.Allowed("written by system:serviceaccount:team-a:flux-reconciler, which writes for Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4)"),
		},
		"TenantServiceAccountOfAnotherKustomizationIsDenied": {
			Reason: "One tenant's service account may not edit another tenant's objects.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend"),
				deployment("team-a", "web", "team-a/frontend", image(0, "nginx:1.27"))).User("system:serviceaccount:team-b:flux-reconciler", "system:serviceaccounts", "system:serviceaccounts:team-b").Build()),
			Want: admission.Denied("fluxguard: Deployment team-a/web is managed by Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Flux, suspend Kustomization team-a/frontend (flux suspend)" + emergency),
		},
		"DefaultServiceAccountWritesForOwnersWithoutOne": {
			Reason: "With --default-service-account, kustomize-controller impersonates it for owners without spec.serviceAccountName, in their namespace.",
			Args: gitopstest.Send(withConfig(Config{DefaultServiceAccount: "flux-applier"}), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User("system:serviceaccount:flux-system:flux-applier").Build()),
			Want: admission.Allowed("written by system:serviceaccount:flux-system:flux-applier, which writes for " + appsOwner),
		},
		"DefaultServiceAccountDoesNotWriteForOwnersWithTheirOwn": {
			Reason: "An owner's own spec.serviceAccountName wins over the default, as in kustomize-controller.",
			Args: gitopstest.Send(withConfig(Config{DefaultServiceAccount: "flux-applier"}), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("team-a", "web", "team-a/frontend")).
				User("system:serviceaccount:team-a:flux-applier").Build()),
			Want: admission.Denied("fluxguard: Deployment team-a/web is managed by Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; to pause Flux, suspend Kustomization team-a/frontend (flux suspend)" + emergency),
		},
		"DefaultServiceAccountIsUnsetByDefault": {
			Reason: "Flux sets no default service account, so without the setting none writes for the owner.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).
				User("system:serviceaccount:flux-system:flux-applier").Build()),
			Want: admission.Denied(podinfoManagedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},

		// Paused and opted-out.
		"SuspendedOwnerIsAllowedWithAWarning": {
			Reason: "While its Kustomization is suspended nothing reverts an edit; it is allowed, and the warning says it stays until the owner resumes.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("monitoring", "grafana", "flux-system/monitoring"),
				deployment("monitoring", "grafana", "flux-system/monitoring", image(0, "grafana/grafana:11.3.0"))).Build()),
			Want: admission.Allowed("Flux Kustomization flux-system/monitoring is suspended").WithWarnings(
				"fluxguard: Deployment monitoring/grafana is managed by Flux Kustomization flux-system/monitoring (GitRepository flux-system/flux-system, path ./monitoring, revision main@sha1:1a2b3c4), and Flux Kustomization flux-system/monitoring is suspended: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"ReconcileDisabledAnnotationIsAllowed": {
			Reason: "kustomize-controller leaves an object annotated reconcile: disabled alone.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile)),
				newImage(set("disabled", "metadata", "annotations", MarkerReconcile))).Build()),
			Want: admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"ReconcileDisabledLabelIsAllowed": {
			Reason: "Flux honours its markers as labels too.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("disabled", "metadata", "labels", MarkerReconcile)),
				newImage(set("disabled", "metadata", "labels", MarkerReconcile))).Build()),
			Want: admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"ReconcileDisabledInCapitalsIsAllowed": {
			Reason: "Flux compares marker values without regard to case.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("DISABLED", "metadata", "annotations", MarkerReconcile))).Build()),
			Want:   admission.Allowed("kustomize.toolkit.fluxcd.io/reconcile=disabled: kustomize-controller leaves the object alone"),
		},
		"SSAIgnoreIsAllowed": {
			Reason: "kustomize-controller does not apply an object marked ssa: Ignore.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("Ignore", "metadata", "annotations", MarkerSSA)),
				newImage(set("Ignore", "metadata", "annotations", MarkerSSA))).Build()),
			Want: admission.Allowed("kustomize.toolkit.fluxcd.io/ssa=Ignore: kustomize-controller leaves the object alone"),
		},
		"SSAIfNotPresentIsAllowed": {
			Reason: "kustomize-controller only creates an object marked ssa: IfNotPresent.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("ifnotpresent", "metadata", "annotations", MarkerSSA)),
				newImage(set("ifnotpresent", "metadata", "annotations", MarkerSSA))).Build()),
			Want: admission.Allowed("kustomize.toolkit.fluxcd.io/ssa=IfNotPresent: kustomize-controller only creates the object"),
		},
		"SSAMergeObjectsAreNeverStripped": {
			Reason: "kustomize-controller skips its cleanup of kubectl's managers on ssa: Merge objects: a person's key is not in Git, but it is kept.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{UndeclaredFields: gitops.UndeclaredMirror}}, breakGlass).WithOwners(fluxOwners), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("apps", "podinfo-config", "flux-system/apps", set("Merge", "metadata", "labels", MarkerSSA)),
				configMap("apps", "podinfo-config", "flux-system/apps", set("Merge", "metadata", "labels", MarkerSSA), set("mine", "data", "extra"), patchedBy("kubectl-patch"))).Build()),
			Want: admission.Allowed("jane changed only fields Git does not declare (/data/extra), as kubectl-patch: kustomize-controller keeps fields others set on an ssa: Merge object"),
		},
		"KubectlsFieldsAreStripped": {
			Reason: "Elsewhere kustomize-controller strips what a kubectl manager wrote: refused even with mirror.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{UndeclaredFields: gitops.UndeclaredMirror}}, breakGlass).WithOwners(fluxOwners), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("apps", "podinfo-config", "flux-system/apps"),
				configMap("apps", "podinfo-config", "flux-system/apps", set("mine", "data", "extra"), patchedBy("kubectl-patch"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap apps/podinfo-config is managed by " + appsOwner + ". Changed: /data/extra, which Git does not declare, written by the field manager kubectl-patch: kustomize-controller removes what that manager writes at its next reconcile. Declare it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/apps (flux suspend); in an emergency repeat the request as a member of steward:break-glass."),
		},
		"SSAMergeIsGuarded": {
			Reason: "ssa: Merge still applies Git's fields, so the object is guarded like any other.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment, set("Merge", "metadata", "annotations", MarkerSSA)),
				newImage(set("Merge", "metadata", "annotations", MarkerSSA))).Build()),
			Want: admission.Denied(podinfoManagedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AddingTheOptOutAsAnOptOutGroupMemberIsAllowed": {
			Reason: "optOutGroups may take an object out of Flux's hands in the cluster, as a change of its own.",
			Args: gitopstest.Send(optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile))).User("alice", "platform-admins", "system:authenticated").Build()),
			Want: admission.Allowed("opt-out /metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile set by alice, a member of an opt-out group"),
		},
		"AddingTheOptOutAsANonMemberIsDenied": {
			Reason: "Anyone else adding the marker is refused; the hint names who may.",
			Args: gitopstest.Send(optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("disabled", "metadata", "annotations", MarkerReconcile))).Build()),
			Want: admission.Denied(podinfoManagedBy + " Adding an opt-out (/metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile) is refused: it stops Flux from managing the object, and may be set by only members of platform-admins, as a change of its own. " +
				"Change it in the Git repository instead; to pause Flux for this object, a member of platform-admins can set kustomize.toolkit.fluxcd.io/reconcile=disabled" + emergency),
		},
		"AddingTheOptOutWithoutOptOutGroupsIsDenied": {
			Reason: "With no opt-out group, opt-outs come from Git; the denial says nobody may add one.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("Ignore", "metadata", "labels", MarkerSSA))).User("alice", "platform-admins").Build()),
			Want: admission.Denied(podinfoManagedBy + " Adding an opt-out (/metadata/labels/kustomize.toolkit.fluxcd.io~1ssa) is refused: it stops Flux from managing the object, and may be set by nobody: no opt-out group is configured." + inGit),
		},
		"AddingTheOptOutTogetherWithAnotherChangeIsDenied": {
			Reason: "An opt-out smuggled in with the edit it would excuse is refused as an edit, even for a member.",
			Args: gitopstest.Send(optOutRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				newImage(set("disabled", "metadata", "annotations", MarkerReconcile))).User("alice", "platform-admins").Build()),
			Want: admission.Denied(podinfoManagedBy + " Changed: /metadata/annotations/kustomize.toolkit.fluxcd.io~1reconcile, /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux for this object, a member of platform-admins can set kustomize.toolkit.fluxcd.io/reconcile=disabled" + emergency),
		},

		// Ownership markers and owners.
		"StrippingOneLabelIsDenied": {
			Reason: "Removing Flux's namespace label hides the object from Flux and from this guard.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationNamespace))).Build()),
			Want: admission.Denied(podinfoManagedBy + " Removing Flux's ownership label kustomize.toolkit.fluxcd.io/namespace is refused: it would hide the object from Flux while it still runs as deployed from Git." + inGit),
		},
		"AddingAnOwnerReferenceIsDenied": {
			Reason: "An owner reference lets the garbage collector delete the object outside Git.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "throwaway", "uid": "11111111-2222-3333-4444-555555555555"}}, "metadata", "ownerReferences"))).Build()),
			Want: admission.Denied(podinfoManagedBy + " Adding the owner reference ConfigMap throwaway is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"SpoofedCreateIsDenied": {
			Reason: "Only Flux's controllers create objects carrying Flux's labels.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("apps", "fake", "flux-system/apps")).Build()),
			Want: admission.Denied("fluxguard: ConfigMap apps/fake carries Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"UpdateGainingTheLabelsIsDenied": {
			Reason: "Adding Flux's labels to an existing object is the same spoofing.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("apps", "mine", "x/y", del("metadata", "labels")),
				configMap("apps", "mine", "flux-system/apps")).Build()),
			Want: admission.Denied("fluxguard: ConfigMap apps/mine would gain Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization flux-system/apps), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateByTheOwnersTenantIsAllowed": {
			Reason: "A tenant's service account creates its Kustomization's objects, labels and all.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("team-a", "web-config", "team-a/frontend")).
				User("system:serviceaccount:team-a:flux-reconciler").Build()),
			Want: admission.Allowed("written by system:serviceaccount:team-a:flux-reconciler, which writes for Flux Kustomization team-a/frontend (GitRepository team-a/team-a, path ./tenants/team-a, revision main@sha1:1a2b3c4)"),
		},
		"CreateByAnotherTenantIsDenied": {
			Reason: "A tenant may not claim objects for another tenant's Kustomization.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("team-a", "web-config", "team-a/frontend")).
				User("system:serviceaccount:team-b:flux-reconciler").Build()),
			Want: admission.Denied("fluxguard: ConfigMap team-a/web-config carries Flux's ownership label kustomize.toolkit.fluxcd.io/name and label kustomize.toolkit.fluxcd.io/namespace (Kustomization team-a/frontend), which only a Flux controller sets; " +
				"a hand-made object with them passes for Git-managed, and Flux may prune or overwrite it. Remove Flux's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateWithoutLabelsIsAllowed": {
			Reason: "Objects without Flux's labels are none of this rule's business.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", configMap("apps", "mine", "x/y", del("metadata", "labels"))).Build()),
			Want:   admission.Allowed(""),
		},
		"DeleteIsDenied": {
			Reason: "Flux would re-create a deleted object at the next reconcile.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(podinfoDeployment)).Build()),
			Want:   admission.Denied(podinfoManagedBy + " Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + appsHint + emergency),
		},
		"DeleteOfAnObjectThatLeftTheInventoryIsAllowed": {
			Reason: "An object removed from Git with pruning off keeps its labels but leaves the inventory; cleaning it up by hand is expected.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap", configMap("apps", "podinfo-old-config", "flux-system/apps")).Build()),
			Want:   admission.Allowed("Flux Kustomization flux-system/apps does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},

		// HelmReleases.
		"HelmReleaseWithInventoryIsDenied": {
			Reason: "helm-controller 1.5 records an inventory, checked like a Kustomization's; drift detection on means the edit is reverted.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo")),
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), image(0, "nginx:1.27"))).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /spec/template/spec/containers/0/image. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"HelmReleaseInventoryNotListingIsAllowed": {
			Reason: "With an inventory the Helm annotations are not consulted: what it does not list is not Flux's.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "podinfo-canary", "x/y", helmLabelled("podinfo/podinfo"), release("podinfo", "podinfo"))).Build()),
			Want:   admission.Allowed("Flux HelmRelease podinfo/podinfo does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"HelmReleaseWithoutInventoryMatchedByShortenedReleaseIsDenied": {
			Reason: "Before Flux 2.8 the Helm release is the record; its name is shortened past 53 characters, and drift detection is off, so the change persists until the next upgrade.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("observability-monitoring-production", promStackRelease)),
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("observability-monitoring-production", promStackRelease), set("debug", "data", "LOG_LEVEL"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap observability-monitoring-production/grafana-dashboards is managed by " + promStackOwner +
				"; its drift detection is disabled, so the change would persist unseen until the next upgrade of the release overwrites it. Changed: /data/LOG_LEVEL. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease flux-system/kube-prometheus-stack (flux suspend)" + emergency),
		},
		"HelmReleaseWithoutInventoryUnshortenedReleaseIsAllowed": {
			Reason: "The release name as written in the annotations must be the one helm-controller installs: the unshortened name is another release.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("observability-monitoring-production", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"),
					release("observability-monitoring-production", "observability-monitoring-production-kube-prometheus-stack"))).Build()),
			Want: admission.Allowed(`Flux HelmRelease flux-system/kube-prometheus-stack installs Helm release observability-monitoring-production/` + promStackRelease +
				`, and the object belongs to release "observability-monitoring-production-kube-prometheus-stack" in "observability-monitoring-production": not Flux's`),
		},
		"HelmReleaseWithoutInventoryOtherNamespaceIsAllowed": {
			Reason: "The release namespace is the targetNamespace, not the HelmRelease's.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("flux-system", "grafana-dashboards", "x/y", helmLabelled("flux-system/kube-prometheus-stack"), release("flux-system", promStackRelease))).Build()),
			Want: admission.Allowed(`Flux HelmRelease flux-system/kube-prometheus-stack installs Helm release observability-monitoring-production/` + promStackRelease +
				`, and the object belongs to release "` + promStackRelease + `" in "flux-system": not Flux's`),
		},
		"HelmReleaseDriftDetectionWarnSaysTheChangeIsReported": {
			Reason: "In warn mode helm-controller reports drift and corrects nothing: the change persists, seen, until the next upgrade.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", deployment("podinfo", "warned", "x/y", helmLabelled("podinfo/warned"))).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/warned is managed by Flux HelmRelease podinfo/warned (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"its drift detection only warns, so the change would persist, reported as drift, until the next upgrade of the release overwrites it. Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/warned (flux suspend)" + emergency),
		},
		"DriftDetectionDisabledMarkerIsAllowed": {
			Reason: "helm-controller does not correct an object marked driftDetection: disabled.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("Disabled", "metadata", "labels", MarkerDriftDetection)),
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("Disabled", "metadata", "labels", MarkerDriftDetection), image(0, "nginx:1.27"))).Build()),
			Want: admission.Allowed("helm.toolkit.fluxcd.io/driftDetection=disabled: helm-controller does not correct the object"),
		},
		"KustomizeMarkerDoesNotOptOutOfAHelmRelease": {
			Reason: "kustomize-controller's marker means nothing to helm-controller.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment",
				deployment("podinfo", "podinfo", "x/y", helmLabelled("podinfo/podinfo"), set("disabled", "metadata", "annotations", MarkerReconcile))).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"TwoOwnersAreBothNamed": {
			Reason: "An object listed by a Kustomization and labelled for a HelmRelease that lists it too has two owners; the denial names both.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace)),
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("debug", "data", "LOG_LEVEL"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap podinfo/podinfo-dashboards is managed by " + appsOwner + " and " + podinfoHR + "; it is reverted at the next reconcile (interval 10m). Changed: /data/LOG_LEVEL." + inGit),
		},

		"PathIgnoredByOnlyOneOfTwoOwnersIsDenied": {
			Reason: "A change persists only if no owner reverts it: the HelmRelease ignores /spec/replicas, the Kustomization that lists the Deployment too does not.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				deployment("podinfo", "autoscaled", "flux-system/apps", set("autoscaled", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), admissiontest.AppliedBy("Update", "helm-controller")),
				deployment("podinfo", "autoscaled", "flux-system/apps", set("autoscaled", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), admissiontest.AppliedBy("Update", "helm-controller"), set(5, "spec", "replicas"))).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/autoscaled is managed by " + appsOwner + " and Flux HelmRelease podinfo/autoscaled (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas." + inGit),
		},
		"ScaleIgnoredByOnlyOneOfTwoOwnersIsDenied": {
			Reason: "The same holds on the scale path, where both owners are found by their inventories.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "podinfo", "autoscaled", 2, 5).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/autoscaled is managed by " + appsOwner + " and Flux HelmRelease podinfo/autoscaled (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"it is reverted at the next reconcile (interval 10m). Changed: /spec/replicas." + inGit),
		},
		"OneOfTwoOwnersSuspendedIsDenied": {
			Reason: "A suspended Kustomization does not revert the edit, but the HelmRelease that lists the object too does: the denial names only the owner that reverts.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace)),
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("debug", "data", "LOG_LEVEL"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap podinfo/grafana-dashboards is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /data/LOG_LEVEL. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"OneOfTwoOwnersOptedOutIsDenied": {
			Reason: "reconcile: disabled stops kustomize-controller only; helm-controller still corrects the object.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				configMap("podinfo", "podinfo-dashboards", "flux-system/apps", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace),
					set("disabled", "metadata", "annotations", MarkerReconcile))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap podinfo/podinfo-dashboards is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"BothOwnersSuspendedOrOptedOutIsAllowed": {
			Reason: "When neither owner reverts the change, it is allowed; the opt-out is the reason.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("disabled", "metadata", "labels", MarkerDriftDetection)),
				configMap("podinfo", "grafana-dashboards", "flux-system/monitoring", set("podinfo", "metadata", "labels", LabelHelmReleaseName), set("podinfo", "metadata", "labels", LabelHelmReleaseNamespace), set("disabled", "metadata", "labels", MarkerDriftDetection), set("debug", "data", "LOG_LEVEL"))).Build()),
			Want: admission.Allowed("helm.toolkit.fluxcd.io/driftDetection=disabled: helm-controller does not correct the object"),
		},

		// The owners' ignore rules.
		"IgnoredByKindTargetIsAllowed": {
			Reason: "platform ignores /spec/replicas of Deployments (target kind).",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("platform", "gateway", "flux-system/platform"),
				deployment("platform", "gateway", "flux-system/platform", set(5, "spec", "replicas"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"KindTargetSelectsOnlyItsKind": {
			Reason: "A rule targeting Deployments leaves the same path of a StatefulSet guarded.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(statefulsetsGVR, "StatefulSet", deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind")),
				deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind"), set(5, "spec", "replicas"))).Build()),
			Want: admission.Denied("fluxguard: StatefulSet platform/worker is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /spec/replicas." + platformInGit),
		},
		"IgnoredByNameRegexIsAllowed": {
			Reason: "platform ignores /data/generated of ConfigMaps named cache-.*.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "cache-redis", "flux-system/platform"),
				configMap("platform", "cache-redis", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"NameRegexNotMatchingIsDenied": {
			Reason: "The same path on a ConfigMap the name does not select is guarded.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "settings", "flux-system/platform"),
				configMap("platform", "settings", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap platform/settings is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /data/generated." + platformInGit),
		},
		"NameRegexIsAnchored": {
			Reason: "Kustomize matches a target's name as a whole: cache-.* does not select old-cache-redis.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "old-cache-redis", "flux-system/platform"),
				configMap("platform", "old-cache-redis", "flux-system/platform", set("2026-11-27", "data", "generated"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap platform/old-cache-redis is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /data/generated." + platformInGit),
		},
		"IgnoredByLabelSelectorIsAllowed": {
			Reason: "platform ignores Istio's injection annotation on objects labelled part-of=mesh; the labels are read on the stored object.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(servicesGVR, "Service",
				configMap("platform", "gateway", "flux-system/platform", set("Service", "kind"), del("data"), set("mesh", "metadata", "labels", "app.kubernetes.io/part-of")),
				configMap("platform", "gateway", "flux-system/platform", set("Service", "kind"), del("data"), set("mesh", "metadata", "labels", "app.kubernetes.io/part-of"), set("false", "metadata", "annotations", "sidecar.istio.io/inject"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"LabelSelectorNotMatchingIsDenied": {
			Reason: "Without the label the annotation is guarded.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", configMap("platform", "settings", "flux-system/platform", injected),
				configMap("platform", "settings", "flux-system/platform", injected, set("false", "metadata", "annotations", "sidecar.istio.io/inject"))).Build()),
			Want: admission.Denied("fluxguard: ConfigMap platform/settings is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /metadata/annotations/sidecar.istio.io~1inject." + platformInGit),
		},
		"IgnoredWithoutTargetIsAllowed": {
			Reason: "A rule without a target applies to every object of the owner: kubectl rollout restart of a StatefulSet.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(statefulsetsGVR, "StatefulSet", deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind")),
				deployment("platform", "worker", "flux-system/platform", set("StatefulSet", "kind"), set("2026-11-27T10:00:00Z", "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredPathDoesNotCoverOtherChanges": {
			Reason: "Ignoring /spec/replicas lets only that through.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("platform", "gateway", "flux-system/platform"),
				deployment("platform", "gateway", "flux-system/platform", set(5, "spec", "replicas"), image(0, "nginx:1.27"))).Build()),
			Want: admission.Denied("fluxguard: Deployment platform/gateway is managed by " + platformOwner + "; it is reverted at the next reconcile (interval 5m). Changed: /spec/template/spec/containers/0/image." + platformInGit),
		},
		"HelmReleaseDriftIgnoreIsAllowed": {
			Reason: "A HelmRelease's spec.driftDetection.ignore works like a Kustomization's spec.ignore.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", deployment("podinfo", "autoscaled", "x/y", helmLabelled("podinfo/autoscaled")),
				deployment("podinfo", "autoscaled", "x/y", helmLabelled("podinfo/autoscaled"), set(7, "spec", "replicas"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"ConfiguredIgnoredFieldsAreAllowed": {
			Reason: "ignoredFields add paths any owner's objects of a kind may change.",
			Args: gitopstest.Send(withConfig(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/spec/containers/0/image"}}}}}),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment), newImage()).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},

		// Control writes and subresources.
		"ReconcileRequestIsAllowed": {
			Reason: "flux reconcile annotates the object; it changes nothing Flux deploys.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set("2026-11-27T10:00:00Z", "metadata", "annotations", "reconcile.fluxcd.io/requestedAt"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"SuspendingAFluxManagedKustomizationIsAllowed": {
			Reason: "flux suspend sets spec.suspend on a Kustomization its parent applies from Git: a control write, not an edit.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(kustomizationsGVR, "Kustomization", obj(appsKustomization),
				obj(appsKustomization, set(true, "spec", "suspend"))).Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"EditingAFluxManagedKustomizationIsDenied": {
			Reason: "Any other change of the Kustomization is an edit of what its parent applies.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(kustomizationsGVR, "Kustomization", obj(appsKustomization),
				obj(appsKustomization, set("./apps/staging", "spec", "path"))).Build()),
			Want: admission.Denied("fluxguard: Kustomization flux-system/apps is managed by Flux Kustomization flux-system/flux-system (GitRepository flux-system/flux-system, path ./clusters/prod, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). " +
				"Changed: /spec/path. Change it in the Git repository instead; to pause Flux, suspend Kustomization flux-system/flux-system (flux suspend)" + emergency),
		},
		"SuspendOnOtherKindsIsAnEdit": {
			Reason: "spec.suspend is a control write only on Flux's kinds; on a CronJob it changes what runs.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, "CronJob",
				configMap("apps", "podinfo-cleanup", "flux-system/apps", set("CronJob", "kind"), del("data"), set(false, "spec", "suspend"), admissiontest.AppliedBy("Apply", "kustomize-controller")),
				configMap("apps", "podinfo-cleanup", "flux-system/apps", set("CronJob", "kind"), del("data"), set(false, "spec", "suspend"), admissiontest.AppliedBy("Apply", "kustomize-controller"), set(true, "spec", "suspend"))).Build()),
			Want: admission.Denied("fluxguard: CronJob apps/podinfo-cleanup is managed by " + appsOwner + "; it is reverted at the next reconcile (interval 10m). Changed: /spec/suspend." + inGit),
		},
		"StatusWriteStrippingALabelIsDenied": {
			Reason: "A status write stores the metadata it carries; stripping Flux's label there is refused like an edit.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, del("metadata", "labels", LabelKustomizationName), set(1, "status", "readyReplicas"))).SubResource("status").Build()),
			Want: admission.Denied(podinfoManagedBy + " Removing Flux's ownership label kustomize.toolkit.fluxcd.io/name is refused: it would hide the object from Flux while it still runs as deployed from Git." + inGit),
		},
		"StatusOnlyWriteIsAllowed": {
			Reason: "Status is never guarded.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(podinfoDeployment),
				obj(podinfoDeployment, set(1, "status", "readyReplicas"))).SubResource("status").Build()),
			Want: admission.Allowed("no change to fields Flux deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},

		// The scale subresource.
		"ScaleOfAListedDeploymentIsDenied": {
			Reason: "kubectl scale of a Deployment an inventory lists changes /spec/replicas; the owner is found by its inventory, since a Scale has no labels.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()),
			Want:   admission.Denied(podinfoManagedBy + " Changed: /spec/replicas." + inGit),
		},
		"ScaleOfAnUnlistedDeploymentIsAllowed": {
			Reason: "No inventory lists apps/legacy.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "apps", "legacy", 2, 5).Build()),
			Want:   admission.Allowed(""),
		},
		"ScaleWithReplicasIgnoredByTheOwnerIsAllowed": {
			Reason: "platform ignores /spec/replicas of its Deployments; the kind selector is read from the request.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "platform", "gateway", 2, 5).Build()),
			Want:   admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleWithReplicasIgnoredByConfigIsAllowed": {
			Reason: "ignoredFields apply on the scale path too.",
			Args: gitopstest.Send(withConfig(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}}}),
				scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()),
			Want: admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleOfAHelmReleaseDeploymentIsDenied": {
			Reason: "A HelmRelease's inventory is searched like a Kustomization's.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "podinfo", "podinfo", 2, 3).Build()),
			Want: admission.Denied("fluxguard: Deployment podinfo/podinfo is managed by " + podinfoHR + "; it is reverted at the next reconcile (interval 30m). Changed: /spec/replicas. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo (flux suspend)" + emergency),
		},
		"ScaleOfASuspendedOwnersDeploymentIsAllowed": {
			Reason: "A suspended owner does not revert a scale either.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "monitoring", "grafana", 1, 2).Build()),
			Want: admission.Allowed("Flux Kustomization flux-system/monitoring is suspended").WithWarnings(
				"fluxguard: Deployment monitoring/grafana is managed by Flux Kustomization flux-system/monitoring (GitRepository flux-system/flux-system, path ./monitoring, revision main@sha1:1a2b3c4), and Flux Kustomization flux-system/monitoring is suspended: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"ScaleByKustomizeControllerIsAllowed": {
			Reason: "Flux's controllers are trusted on the scale path.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).User(kustomizeController).Build()),
			Want:   admission.Allowed("written by a Flux controller"),
		},
		"ScaleWithCacheThatCannotAnswerIsAnError": {
			Reason: "The scale webhook fails open (Ignore), but the handler still reports the error rather than guessing.",
			Args: gitopstest.Send(New(Config{}, breakGlass).WithOwners(fakeOwners{err: errors.New("fluxguard: waiting for API discovery")}),
				scaleRequest(deploymentsGVR, "apps", "podinfo", 2, 5).Build()),
			Want: admission.Errored(http.StatusServiceUnavailable, errors.New("listing Flux owners: fluxguard: waiting for API discovery")),
		},
	}
	gitopstest.TestHandle(t, cases)
}

// scaleRequest is an UPDATE of a workload's scale subresource, as the API
// server sends it: the Scale object, under the workload's resource.
func scaleRequest(gvr schema.GroupVersionResource, namespace, name string, from, to int) *admissiontest.Request {
	return admissiontest.Update(gvr, "Scale", scaleObject(namespace, name, from), scaleObject(namespace, name, to)).
		SubResource("scale").
		RequestKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, gvr.Resource)
}
