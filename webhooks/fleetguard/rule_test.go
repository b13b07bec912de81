package fleetguard

import (
	"errors"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

const (
	owner        = "(bundle deployment web-app, Helm release default/web-app)"
	managedBy    = "fleetguard: Deployment default/web is managed by Fleet " + owner + "; manual changes diverge from Git and Fleet reverts them."
	podManagedBy = "fleetguard: Pod default/web is managed by Fleet " + owner + "; manual changes diverge from Git and Fleet reverts them."
	inGit        = " Change it in the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."
	// notInGit ends the denial of a person's change of fields Git does not
	// declare, which Fleet keeps: no revert is claimed.
	notInGit = ", which Git does not declare: Fleet keeps fields outside the chart, and the change would live only in the cluster. Hand edits of managed objects are refused; declare it in the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."
	keptBy   = "fleetguard: Deployment default/web is managed by Fleet " + owner + "."
)

func defaultRule() *Rule {
	return New(Config{}, "steward:break-glass").WithParents(parents)
}

func ignoringReplicas() *Rule {
	return New(Config{Settings: gitops.Settings{IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}}}, "steward:break-glass").WithParents(parents)
}

func TestHandle(t *testing.T) {
	cases := map[string]gitopstest.HandleCase{
		"AgentUpdateIsAllowed": {
			Reason: "The Fleet agent deploys from Git; its writes are the desired state.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"))).User(fleetAgent, "system:serviceaccounts", "system:serviceaccounts:cattle-fleet-system").Build()),
			Want: admission.Allowed("written by the Fleet agent"),
		},
		"LocalClusterAgentDeleteIsAllowed": {
			Reason: "The agent of Fleet's own cluster runs in cattle-fleet-local-system.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).
				User("system:serviceaccount:cattle-fleet-local-system:fleet-agent").Build()),
			Want: admission.Allowed("written by the Fleet agent"),
		},
		"ImpersonatedServiceAccountInAgentNamespaceIsAllowed": {
			Reason: "Fleet impersonates service accounts of its own namespace (fleet-default, or fleet.yaml's serviceAccount); the request arrives as that account, with its namespace's group.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"))).
				User("system:serviceaccount:cattle-fleet-system:fleet-default", "system:serviceaccounts", "system:serviceaccounts:cattle-fleet-system", "system:authenticated").Build()),
			Want: admission.Allowed("written by the Fleet agent"),
		},
		"ConfiguredAgentUserIsAllowed": {
			Reason: "agentUsers can name further identities the agent writes as.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{AgentUsers: []string{"system:serviceaccount:apps:deployer"}}}, "steward:break-glass"),
				admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).User("system:serviceaccount:apps:deployer").Build()),
			Want: admission.Allowed("written by the Fleet agent"),
		},
		"ReplacedAgentUsersNoLongerAllowTheDefault": {
			Reason: "Setting agentUsers (and agentGroups) replaces the defaults.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{AgentUsers: []string{"someone"}, AgentGroups: []string{"some-group"}}}, "steward:break-glass"),
				admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).User(fleetAgent).Build()),
			Want: admission.Denied(managedBy + " Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"GarbageCollectorDeleteIsAllowed": {
			Reason: "The garbage collector deletes dependents of deleted owners; refusing it leaves orphans behind.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).User(garbageCollectr, "system:serviceaccounts", "system:serviceaccounts:kube-system").Build()),
			Want:   admission.Allowed("written by a Kubernetes controller"),
		},
		"NamespaceControllerDeleteIsAllowed": {
			Reason: "The namespace controller empties a namespace being deleted; refusing it leaves the namespace Terminating forever.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).User("system:serviceaccount:kube-system:namespace-controller").Build()),
			Want:   admission.Allowed("written by a Kubernetes controller"),
		},
		"DeploymentControllerRevisionAnnotationIsAllowed": {
			Reason: "The deployment controller writes deployment.kubernetes.io/revision on the Deployment itself, not through status.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("4", "metadata", "annotations", "deployment.kubernetes.io/revision"))).User("system:serviceaccount:kube-system:deployment-controller").Build()),
			Want: admission.Allowed("written by a Kubernetes controller"),
		},
		"EndpointSliceControllerCreateIsAllowed": {
			Reason: "EndpointSlices copy their Service's labels, Fleet's included; their controller creating one is no spoofing.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Create(schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, "EndpointSlice",
				map[string]any{"metadata": map[string]any{"generateName": "web-", "namespace": "default", "labels": map[string]any{LabelHash: "abc"}}}).
				User("system:serviceaccount:kube-system:endpointslice-controller").Build()),
			Want: admission.Allowed("written by a Kubernetes controller"),
		},
		"KubeletDeletingItsPodIsAllowed": {
			Reason: "A kubelet deletes the pods it finished terminating; refusing it leaves them Terminating.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(podsGVR, "Pod", map[string]any{"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{LabelHash: "abc"}}}).
				User("system:node:worker-1", "system:nodes", "system:authenticated").Build()),
			Want: admission.Allowed("written by a Kubernetes controller"),
		},
		"HumanImageChangeIsDenied": {
			Reason: "A hand edit of a Fleet-managed object is refused with the whole explanation.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"))).Build()),
			Want: admission.Denied("fleetguard: Deployment default/web is managed by Fleet (bundle deployment web-app, Helm release default/web-app); manual changes diverge from Git and Fleet reverts them. Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"DryRunGetsTheSameAnswer": {
			Reason: "A dry run is answered as the real request would be, so kubectl --dry-run=server predicts the outcome.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"))).DryRun().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ManyChangesListTheFirstFiveAndCountTheRest": {
			Reason: "The message stays readable: five paths, in a stable order, then how many more; the label Git does not declare is not among the reverted ones.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				container(0, "image", "x"), container(1, "image", "y"), container(0, "imagePullPolicy", "Always"),
				set(5, "spec", "replicas"), set(20, "spec", "revisionHistoryLimit"), set("Recreate", "spec", "strategy", "type"),
				set("team-a", "metadata", "labels", "owner"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/replicas, /spec/revisionHistoryLimit, /spec/strategy/type, /spec/template/spec/containers/0/image, /spec/template/spec/containers/0/imagePullPolicy and 1 more." + inGit),
		},
		"AddedSubtreeIsReportedLeafByLeaf": {
			Reason: "A subtree added whole is reported by its leaves, which can be pasted into ignoredFields; empty maps and lists are no change.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set(map[string]any{
					"nodeAffinity":    map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{}}},
					"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 1}}},
				}, "spec", "template", "spec", "affinity"))).Build()),
			Want: admission.Denied(keptBy + " Changed: /spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight" + notInGit),
		},
		"AnnotationKeysAreEscapedAsJSONPointers": {
			Reason: "Paths are RFC 6901 pointers, so they can be pasted into ignoredFields as they are.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set("2026-01-12T10:00:00Z", "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"))).Build()),
			Want: admission.Denied(keptBy + " Changed: /spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt" + notInGit),
		},
		"HumanDeleteIsDenied": {
			Reason: "Deleting a Fleet-managed object is refused: Fleet would re-create it.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).Build()),
			Want:   admission.Denied("fleetguard: Deployment default/web is managed by Fleet (bundle deployment web-app, Helm release default/web-app); manual changes diverge from Git and Fleet reverts them. Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"DryRunDeleteGetsTheSameAnswer": {
			Reason: "kubectl delete --dry-run=server predicts the refusal.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).DryRun().
				Options(metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}).Build()),
			Want: admission.Denied(managedBy + " Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"DeleteOfUnlabelledObjectIsAllowed": {
			Reason: "Only objects carrying Fleet's label are guarded (the objectSelector sends no others).",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment, del("metadata", "labels", LabelHash))).Build()),
			Want:   admission.Allowed(""),
		},
		"StatusOnlyUpdateIsAllowed": {
			Reason: "Status is observed state, not what Fleet deploys.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set(1, "status", "readyReplicas"), set(4, "status", "observedGeneration"))).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"StatusSubresourceWriteOfStatusIsAllowed": {
			Reason: "A status write that changes only status is observed state, not what Fleet deploys.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set(1, "status", "readyReplicas"))).SubResource("status").Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"StatusSubresourceStrippingTheLabelIsRefused": {
			Reason: "Most kinds' status strategies store metadata changes, so stripping Fleet's label through /status is judged like an edit.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, del("metadata", "labels", LabelHash))).SubResource("status").Build()),
			Want: admission.Denied(managedBy + " Removing Fleet's ownership label objectset.rio.cattle.io/hash is refused: it would hide the object from Fleet while it still runs as deployed from Git." + inGit),
		},
		"StatusSubresourceAddingTheOwnerAnnotationIsRefused": {
			Reason: "An owner-gvk annotation added through /status would take the object out of fleetguard's hands.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("v1, Kind=Namespace", "metadata", "annotations", AnnotationOwnerGVK))).SubResource("status").Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/objectset.rio.cattle.io~1owner-gvk." + inGit),
		},
		"EphemeralContainersAreRefused": {
			Reason: "kubectl debug adds ephemeral containers through their own subresource, a change of the Pod's spec.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(podsGVR, "Pod", obj(webPod),
				obj(webPod, set([]any{map[string]any{"name": "debugger", "image": "busybox"}}, "spec", "ephemeralContainers"))).SubResource("ephemeralcontainers").Build()),
			Want: admission.Denied(podManagedBy + " Changed: /spec/ephemeralContainers/0/image, /spec/ephemeralContainers/0/name. Every field counts as Git's: the object's managedFields have no entry of fleetagent, which would record the fields Git declares." + inGit),
		},
		"OtherSubresourcesAreNotJudged": {
			Reason: "The webhooks ask for no other subresource; one that arrives anyway is allowed.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set(9, "spec", "replicas"))).SubResource("rollback").Build()),
			Want: admission.Allowed(""),
		},
		"AddingAnOwnerIsRefused": {
			Reason: "The garbage collector deletes an object whose owners are gone, so a new owner reference is a delete deferred to whoever controls the owner.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}}, "metadata", "ownerReferences"))).Build()),
			Want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"AddingAnOwnerThroughStatusIsRefused": {
			Reason: "The same owner reference added through /status is refused too.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}}, "metadata", "ownerReferences"))).SubResource("status").Build()),
			Want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"RemovingAnOwnerIsAllowed": {
			Reason: "Removing an owner reference only keeps the object from being collected.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				obj(webDeployment, set([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}}, "metadata", "ownerReferences")),
				obj(webDeployment)).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"MetadataBookkeepingIsAllowed": {
			Reason: "Finalizers, resource version, generation and kubectl's last-applied annotation are bookkeeping, and clearing a stuck finalizer must work.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set([]any{"example.com/cleanup"}, "metadata", "finalizers"),
				set("48214", "metadata", "resourceVersion"), set(4, "metadata", "generation"),
				set(`{"kind":"Deployment"}`, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"))).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"StrippingTheAgentsManagedFieldsIsRefused": {
			Reason: "Without the agent's entry every field would look like someone else's: stripping managedFields ([{}]) is refused, whoever asks.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment,
				set([]any{}, "metadata", "managedFields"))).User("system:serviceaccount:ops:cleaner").Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/managedFields (the fleetagent entry, which records what Fleet " + owner + " applies from Git)." + inGit),
		},
		"UnchangedUpdateIsAllowed": {
			Reason: "kubectl edit or apply without changes is no drift.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment)).Build()),
			Want:   admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredFieldChangeIsAllowed": {
			Reason: "An ignored path may be changed by hand, like Fleet's diff.comparePatches.",
			Args: gitopstest.Send(ignoringReplicas(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set(5, "spec", "replicas"))).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredFieldRemovalIsAllowed": {
			Reason: "Removing an ignored field is a change of that field too.",
			Args: gitopstest.Send(ignoringReplicas(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, del("spec", "replicas"))).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredPointerCoversEverythingBelowIt": {
			Reason: "Ignoring pod template annotations allows kubectl rollout restart, even when the annotations map is new.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/metadata/annotations"}}}}}, "steward:break-glass"),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
					obj(webDeployment, set("2026-01-12T10:00:00Z", "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"))).Build()),
			Want: admission.Allowed("no change to fields Fleet deploys (status, metadata bookkeeping and ignored fields are not guarded)"),
		},
		"IgnoredFieldInsideAnAddedSubtreeIsExamined": {
			Reason: "When a subtree is added whole and an ignored path lies inside it, only the paths beside the ignored one count.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt"}}}}}, "steward:break-glass"),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
					obj(webDeployment, set(map[string]any{"kubectl.kubernetes.io/restartedAt": "now", "team": "a"}, "spec", "template", "metadata", "annotations"))).Build()),
			Want: admission.Denied(keptBy + " Changed: /spec/template/metadata/annotations/team" + notInGit),
		},
		"IgnoredFieldDoesNotHideOtherChanges": {
			Reason: "An ignored path in the same request does not let a real change through, and is not listed.",
			Args: gitopstest.Send(ignoringReplicas(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set(5, "spec", "replicas"), container(0, "image", "ghcr.io/example/web:1.5.0"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoredFieldsApplyToTheirKindOnly": {
			Reason: "Ignoring /spec/replicas of StatefulSets leaves Deployments guarded.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "StatefulSet", Paths: []string{"/spec/replicas"}}}}}, "steward:break-glass"),
				admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment, set(5, "spec", "replicas"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/replicas." + inGit),
		},
		"StrippingTheLabelIsDenied": {
			Reason: "Removing Fleet's label would hide the object from Fleet and from this guard.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, del("metadata", "labels", LabelHash))).Build()),
			Want: admission.Denied(managedBy + " Removing Fleet's ownership label objectset.rio.cattle.io/hash is refused: it would hide the object from Fleet while it still runs as deployed from Git." + inGit),
		},
		"StrippingBothKeysIsDenied": {
			Reason: "The message names every key removed.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, del("metadata", "labels", LabelHash), del("metadata", "annotations", AnnotationID))).Build()),
			Want: admission.Denied(managedBy + " Removing Fleet's ownership label objectset.rio.cattle.io/hash and annotation objectset.rio.cattle.io/id is refused: it would hide the object from Fleet while it still runs as deployed from Git." + inGit),
		},
		"StrippingTheIDAnnotationIsDenied": {
			Reason: "The id annotation is an ownership key too.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, del("metadata", "annotations", AnnotationID))).Build()),
			Want: admission.Denied("fleetguard: Deployment default/web is managed by Fleet " + owner + "; manual changes diverge from Git and Fleet reverts them. Removing Fleet's ownership annotation objectset.rio.cattle.io/id is refused: it would hide the object from Fleet while it still runs as deployed from Git." + inGit),
		},
		"ChangingTheLabelValueIsAChange": {
			Reason: "Moving an object to another object set is a change like any other.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("other", "metadata", "labels", LabelHash))).Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/labels/objectset.rio.cattle.io~1hash." + inGit),
		},
		"AddingAnOwnerAnnotationIsAChange": {
			Reason: "Marking a bundle's object as applied with an owner would take it out of this guard.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("v1, Kind=Namespace", "metadata", "annotations", AnnotationOwnerGVK))).Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/objectset.rio.cattle.io~1owner-gvk." + inGit),
		},
		"CreateWithFleetKeysIsDenied": {
			Reason: "Only the Fleet agent may create objects that claim to belong to a bundle.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", obj(webDeployment)).Build()),
			Want:   admission.Denied("fleetguard: Deployment default/web carries Fleet's ownership label objectset.rio.cattle.io/hash and annotation objectset.rio.cattle.io/id " + owner + ", which only the Fleet agent sets; a hand-made object with them passes for Git-managed, and Fleet may prune or overwrite it. Remove Fleet's keys, or add the object to the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"CreateWithOnlyTheLabelNamesTheObjectSet": {
			Reason: "Without the id and Helm annotations the owner is the object set hash; a generated name shows as its prefix.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", map[string]any{"metadata": map[string]any{"generateName": "settings-", "labels": map[string]any{LabelHash: "abc"}}}).Namespace("apps").Build()),
			Want:   admission.Denied("fleetguard: ConfigMap apps/settings-* carries Fleet's ownership label objectset.rio.cattle.io/hash (object set abc), which only the Fleet agent sets; a hand-made object with them passes for Git-managed, and Fleet may prune or overwrite it. Remove Fleet's keys, or add the object to the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"CreateWithoutFleetKeysIsAllowed": {
			Reason: "Ordinary objects are none of this rule's business.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", obj(webDeployment, del("metadata", "labels", LabelHash), del("metadata", "annotations", AnnotationID))).Build()),
			Want:   admission.Allowed(""),
		},
		"UpdateAddingFleetKeysIsDenied": {
			Reason: "Adding Fleet's keys to an existing object is the same spoofing as creating one with them.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				map[string]any{"metadata": map[string]any{"name": "settings", "namespace": "apps"}},
				map[string]any{"metadata": map[string]any{"name": "settings", "namespace": "apps", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationID: "default-settings"}}}).Build()),
			Want: admission.Denied("fleetguard: ConfigMap apps/settings would gain Fleet's ownership label objectset.rio.cattle.io/hash and annotation objectset.rio.cattle.io/id (bundle deployment settings), which only the Fleet agent sets; a hand-made object with them passes for Git-managed, and Fleet may prune or overwrite it. Remove Fleet's keys, or add the object to the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"ObjectsAppliedWithAnOwnerAreNotGuarded": {
			Reason: "Rancher and Fleet's controller apply their own objects with an owner annotation; they are not bundle content.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap",
				map[string]any{"metadata": map[string]any{"name": "agent", "namespace": "cattle-fleet-system", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationOwnerGVK: "fleet.cattle.io/v1alpha1, Kind=Cluster"}}, "data": map[string]any{"a": "1"}},
				map[string]any{"metadata": map[string]any{"name": "agent", "namespace": "cattle-fleet-system", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationOwnerGVK: "fleet.cattle.io/v1alpha1, Kind=Cluster"}}, "data": map[string]any{"a": "2"}}).
				User("system:serviceaccount:cattle-system:rancher").Build()),
			Want: admission.Allowed(appliedWithOwnerReason),
		},
		"CreateAppliedWithAnOwnerIsAllowed": {
			Reason: "Rancher creating its own object set is not spoofing a bundle.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap",
				map[string]any{"metadata": map[string]any{"name": "agent", "namespace": "x", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationOwnerGVK: "v1, Kind=Namespace"}}}).Build()),
			Want: admission.Allowed(appliedWithOwnerReason),
		},
		"DeleteAppliedWithAnOwnerIsAllowed": {
			Reason: "Deleting a controller's own object set member is the controller's business.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(configmapsGVR, "ConfigMap",
				map[string]any{"metadata": map[string]any{"name": "agent", "namespace": "x", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationOwnerGVK: "v1, Kind=Namespace"}}}).Build()),
			Want: admission.Allowed(appliedWithOwnerReason),
		},
		"ClusterScopedObjectsAreNamedWithoutNamespace": {
			Reason: "Cluster-scoped objects have no namespace in the message.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole",
				map[string]any{"metadata": map[string]any{"name": "web-reader", "labels": map[string]any{LabelHash: "abc"}, "annotations": map[string]any{AnnotationID: "default-web-app"}}}).Build()),
			Want: admission.Denied("fleetguard: ClusterRole web-reader is managed by Fleet (bundle deployment web-app); manual changes diverge from Git and Fleet reverts them. Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"WithoutBreakGlassGroupTheEmergencyHintIsLeftOut": {
			Reason: "The message never names a group that does not exist.",
			Args:   gitopstest.Send(New(Config{}, ""), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).Build()),
			Want:   admission.Denied(managedBy + " Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead."),
		},
		"MalformedOldObjectIsAnError": {
			Reason: "Undecodable input is an error for the failure policy, never a panic or a silent allow.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", []byte(`{"metadata": `), obj(webDeployment)).Build()),
			Want:   admission.Errored(http.StatusBadRequest, errors.New("update, old object: decoding object: unexpected EOF")),
		},
		"NonObjectNewObjectIsAnError": {
			Reason: "A JSON value that is not an object is refused as bad input.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), []byte(`[1, 2]`)).Build()),
			Want:   admission.Errored(http.StatusBadRequest, errors.New("update, new object: object is an array, not a JSON object")),
		},
		"DeleteWithoutOldObjectIsAnError": {
			Reason: "Without the stored object the owner cannot be checked.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", nil).Build()),
			Want:   admission.Errored(http.StatusBadRequest, errors.New("delete: the request carries no oldObject, so the object's owner cannot be checked")),
		},
		"CreateWithNonStringLabelsIsAnError": {
			Reason: "Metadata of the wrong shape is bad input.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(configmapsGVR, "ConfigMap", []byte(`{"metadata": {"labels": {"a": 1}}}`)).Build()),
			Want:   admission.Errored(http.StatusBadRequest, errors.New("create: metadata.labels is a JSON number, where a string is expected")),
		},

		// The scale subresource.
		"HumanScaleOfFleetDeploymentIsDenied": {
			Reason: "kubectl scale changes /spec/replicas of a Fleet-managed Deployment.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "web", 3, 5).Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/replicas." + inGit),
		},
		"DryRunScaleGetsTheSameAnswer": {
			Reason: "Dry runs are answered like real requests on the scale path too.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "web", 3, 5).DryRun().Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/replicas." + inGit),
		},
		"ScaleOfStatefulSetNamesTheStatefulSet": {
			Reason: "The message names the workload, not the Scale object.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(statefulsetsGVR, "db", 1, 3).Build()),
			Want:   admission.Denied("fleetguard: StatefulSet default/db is managed by Fleet " + owner + "; manual changes diverge from Git and Fleet reverts them. Changed: /spec/replicas." + inGit),
		},
		"ScaleWithReplicasIgnoredIsAllowed": {
			Reason: "The scale subresource follows the ignoredFields setting of the workload's kind.",
			Args:   gitopstest.Send(ignoringReplicas(), scaleRequest(deploymentsGVR, "web", 3, 5).Build()),
			Want:   admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleWithSpecIgnoredIsAllowed": {
			Reason: "An ignored pointer above /spec/replicas covers it.",
			Args: gitopstest.Send(New(Config{Settings: gitops.Settings{IgnoredFields: []IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec"}}}}}, "steward:break-glass").WithParents(parents),
				scaleRequest(deploymentsGVR, "web", 3, 5).Build()),
			Want: admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"OperatorScaleWhereTheChartDeclaresNoReplicasIsAllowed": {
			Reason: "Fleet keeps replicas its chart does not declare: an operator's scale persists, so it passes.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "scaled", 3, 4).User("system:serviceaccount:ops:scaler").Build()),
			Want:   admission.Allowed("system:serviceaccount:ops:scaler scaled the workload, whose replicas Git does not declare: Fleet keeps fields outside the chart"),
		},
		"HumanScaleWhereTheChartDeclaresNoReplicasIsRefusedHonestly": {
			Reason: "A person's scale outside Git is refused by default, without claiming a revert.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "scaled", 3, 4).Build()),
			Want:   admission.Denied("fleetguard: Deployment default/scaled is managed by Fleet " + owner + ". Changed: /spec/replicas" + notInGit),
		},
		"HorizontalPodAutoscalerIsAllowed": {
			Reason: "The HPA's scale is its job (and never sent): Fleet keeps its replicas where the chart declares none.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "web", 3, 4).User(hpaController, "system:serviceaccounts", "system:serviceaccounts:kube-system").Build()),
			Want:   admission.Allowed("scaled by the autoscaler " + hpaController),
		},
		"AgentScaleIsAllowed": {
			Reason: "The agent is trusted on the scale path too.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "web", 3, 5).User(fleetAgent).Build()),
			Want:   admission.Allowed("written by the Fleet agent"),
		},
		"ScaleOfUnmanagedWorkloadIsAllowed": {
			Reason: "Workloads without Fleet's label are not guarded.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "plain", 3, 5).Build()),
			Want:   admission.Allowed(""),
		},
		"ScaleOfWorkloadAppliedWithOwnerIsAllowed": {
			Reason: "Workloads applied with an owner are not bundle content.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "rancher", 1, 2).Build()),
			Want:   admission.Allowed(appliedWithOwnerReason),
		},
		"ScaleWithoutReplicaChangeIsAllowed": {
			Reason: "A scale request that keeps the count changes nothing; no cache read is needed.",
			Args:   gitopstest.Send(New(Config{}, "steward:break-glass"), scaleRequest(deploymentsGVR, "web", 3, 3).Build()),
			Want:   admission.Allowed(""),
		},
		"ScaleWithoutCacheIsAnError": {
			Reason: "A rule whose cache was never set up answers with an error instead of panicking.",
			Args:   gitopstest.Send(New(Config{}, "steward:break-glass"), scaleRequest(deploymentsGVR, "web", 3, 5).Build()),
			Want:   admission.Errored(http.StatusServiceUnavailable, errors.New("the workload metadata cache is not set up, so the owner of Deployment default/web cannot be checked")),
		},
		"ScaleOfWorkloadMissingFromCacheIsNotManaged": {
			Reason: "The cache holds only workloads with Fleet's hash label (CacheByObject), so one missing from it is not Fleet-managed.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(deploymentsGVR, "new", 1, 2).Build()),
			Want:   admission.Allowed(""),
		},
		"ScaleWithUnstartedCacheIsAnError": {
			Reason: "A cache that has not started is reported, not treated as 'not managed'.",
			Args:   gitopstest.Send(New(Config{}, "steward:break-glass").WithParents(fakeParents{err: &cache.ErrCacheNotStarted{}}), scaleRequest(deploymentsGVR, "web", 1, 2).Build()),
			Want:   admission.Errored(http.StatusServiceUnavailable, errors.New("reading Deployment default/web from the workload metadata cache: the cache is not started, can not read objects")),
		},
		"MalformedScaleIsAnError": {
			Reason: "Bad Scale input is an error.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Scale", scaleObject("web", 1), []byte(`{"spec": {"replicas": "many"}}`)).SubResource("scale").Build()),
			Want:   admission.Errored(http.StatusBadRequest, errors.New("scale, new object: decoding Scale: spec.replicas: json: cannot unmarshal string into Go value of type int64")),
		},
		"ScaleOfOtherResourceIsAllowed": {
			Reason: "Only the three apps workloads are guarded on the scale path.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "web", 1, 2).Build()),
			Want:   admission.Allowed(""),
		},
	}
	gitopstest.TestHandle(t, cases)
}

// scaleRequest is an UPDATE of a workload's scale subresource, as the API
// server sends it: the Scale object, under the workload's resource.
func scaleRequest(gvr schema.GroupVersionResource, name string, from, to int) *admissiontest.Request {
	return admissiontest.Update(gvr, "Scale", scaleObject(name, from), scaleObject(name, to)).
		SubResource("scale").
		RequestKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, gvr.Resource)
}

func TestBundleDeployment(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		want   string
	}{
		"FleetID":          {reason: "Fleet's agent builds ids as \"default-\" + bundle deployment name.", id: "default-web-app", want: "web-app"},
		"AgentScope":       {reason: "With an agent scope, Fleet appends it; it cannot be told apart and stays in the name.", id: "default-mcc-harvester-cattle-fleet-local-system", want: "mcc-harvester-cattle-fleet-local-system"},
		"OtherPrefix":      {reason: "An id not built by the agent is shown as it is.", id: "fleet-agent-bootstrap", want: "fleet-agent-bootstrap"},
		"Empty":            {reason: "No id, no bundle deployment.", id: "", want: ""},
		"PlaceholderDash":  {reason: "\"-\" carries no name.", id: "-", want: ""},
		"OnlyPrefixRemain": {reason: "The prefix alone names nothing.", id: "default-", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := bundleDeployment(tc.id); got != tc.want {
				t.Errorf("%s\nbundleDeployment(%q) = %q, want %q", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}
