package argocdguard

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

const (
	guestbook = "Argo CD Application argocd/guestbook (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7)"
	selfHeals = "it is reverted at Argo CD's next self-heal (self-heal is on)"
	managedBy = "argocdguard: Deployment default/web is managed by " + guestbook + "; " + selfHeals + "."
	pause     = "; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/guestbook"
	emergency = "; in an emergency repeat the request as a member of steward:break-glass."
	inGit     = " Change it in the Git repository instead" + pause + emergency
	deleting  = " Deleting it is refused: Argo CD would re-create it. Remove it from the Git repository instead" + pause + emergency
	noChange  = "no change to fields Argo CD deploys (status, metadata bookkeeping and ignored fields are not guarded)"
)

// newRule builds argocdguard with c over a cache of the given Applications.
func newRule(c Config, apps ...map[string]any) *Rule {
	return New(c, "steward:break-glass").WithApplications(appsCache(apps...))
}

func defaultRule() *Rule { return newRule(Config{}, obj(guestbookApp)) }

// imageChange is a person's kubectl set image of the web Deployment,
// edited first by edits.
func imageChange(edits ...func(map[string]any)) *admissiontest.Request {
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment, edits...),
		obj(webDeployment, append(edits, container(0, "image", "ghcr.io/example/web:1.5.0"))...))
}

// appOfApps is Application argocd/root, which syncs the guestbook
// Application from Git.
func appOfApps() map[string]any {
	return obj(guestbookApp, named("", "root"),
		set(map[string]any{"repoURL": "https://github.com/example/apps", "path": "apps", "targetRevision": "main"}, "spec", "source"),
		set("0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c", "status", "sync", "revision"),
		set([]any{map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "guestbook"}}, "status", "resources"))
}

// trackedApp is the guestbook Application as root deployed it.
func trackedApp(edits ...func(map[string]any)) map[string]any {
	// Synced from Git by root, which declares all of it.
	return obj(guestbookApp, append([]func(map[string]any){trackedAs("root:argoproj.io/Application:argocd/guestbook"), admissiontest.AppliedBy("Apply", "argocd-controller")}, edits...)...)
}

const rootManagesGuestbook = "argocdguard: Application argocd/guestbook is managed by Argo CD Application argocd/root (repo https://github.com/example/apps, path apps, target main, revision 0f1e2d3); " + selfHeals + "."

// webConfig is a ConfigMap a chart labels with its instance, without a
// tracking id.
func webConfig(name string, data string) map[string]any {
	o := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app.kubernetes.io/instance": "guestbook"}},
		"data":     map[string]any{"LOG_LEVEL": "info"},
	}
	admissiontest.AppliedBy("Apply", "argocd-controller")(o)
	o["data"].(map[string]any)["LOG_LEVEL"] = data
	return o
}

// webReader is a ClusterRole Argo CD synced: its tracking id holds the
// Application's destination namespace.
var webReader = map[string]any{
	"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
	"metadata": map[string]any{"name": "web-reader", "annotations": map[string]any{AnnotationTrackingID: "guestbook:rbac.authorization.k8s.io/ClusterRole:default/web-reader"}},
	"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}},
}

func TestHandle(t *testing.T) {
	web := func(edits ...func(map[string]any)) map[string]any { return obj(webDeployment, edits...) }
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}}
	cases := map[string]gitopstest.HandleCase{
		// Who writes.
		"ControllerUpdateIsAllowed": {
			Reason: "Argo CD's application controller syncs from Git; its writes are the desired state.",
			Args: gitopstest.Send(defaultRule(), imageChange().
				User(argoController, "system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated").Build()),
			Want: admission.Allowed("written by Argo CD's application controller"),
		},
		"GarbageCollectorDeleteIsAllowed": {
			Reason: "Kubernetes' controllers are never refused.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", web()).User(garbageCollectr).Build()),
			Want:   admission.Allowed("written by a Kubernetes controller"),
		},
		"HumanImageChangeIsRefused": {
			Reason: "A hand edit of a synced object is refused with the whole explanation on one line: the Application, its source and revision, and that self-heal reverts it.",
			Args:   gitopstest.Send(defaultRule(), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				"it is reverted at Argo CD's next self-heal (self-heal is on). Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; " +
				"to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/guestbook; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"WithoutSelfHealTheChangeStaysUntilTheNextSync": {
			Reason: "With automated sync but no self-heal, Argo CD leaves a hand edit in place until the next sync; the message says so.",
			Args:   gitopstest.Send(newRule(Config{}, obj(guestbookApp, del("spec", "syncPolicy", "automated", "selfHeal"))), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; self-heal is off, so the change stays until the next sync from Git, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"WithoutAutomatedSyncTheChangeStaysUntilSomeoneSyncs": {
			Reason: "Without automated sync, a hand edit stays until a sync overwrites it.",
			Args:   gitopstest.Send(newRule(Config{}, obj(guestbookApp, del("spec", "syncPolicy", "automated"))), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; automated sync is off, so the change stays until the next sync from Git overwrites it, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AutomatedSyncDisabledTurnsSelfHealOff": {
			Reason: "automated.enabled: false (Argo CD 3) switches automated sync off, and self-heal with it.",
			Args:   gitopstest.Send(newRule(Config{}, obj(guestbookApp, set(false, "spec", "syncPolicy", "automated", "enabled"))), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; automated sync is off, so the change stays until the next sync from Git overwrites it, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"SourcesNameTheFirstSource": {
			Reason: "An Application with several sources is named by the first and its revision (status.sync.revisions); a chart source by its chart, and its revision, the chart's version, whole.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, del("spec", "source"), set([]any{
				map[string]any{"repoURL": "https://charts.example.com", "chart": "web", "targetRevision": "1.24.*"},
				map[string]any{"repoURL": "https://github.com/example/values", "ref": "values"},
			}, "spec", "sources"), del("status", "sync", "revision"),
				set([]any{"1.24.10-rc.1", "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b"}, "status", "sync", "revisions"))), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo https://charts.example.com, chart web, target 1.24.*, revision 1.24.10-rc.1); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"OCIDigestIsShortened": {
			Reason: "An OCI source's revision is a digest, shortened as a commit is.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, set(map[string]any{"repoURL": "oci://ghcr.io/example/manifests", "path": ".", "targetRevision": "1.4.2"}, "spec", "source"),
				set("sha256:9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c", "status", "sync", "revision"))), imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo oci://ghcr.io/example/manifests, path ., target 1.4.2, revision sha256:9b1c2d3); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AnotherInstallationsObjectIsAllowed": {
			Reason: "An object another Argo CD instance synced carries its installation id: this instance does not track it.",
			Args:   gitopstest.Send(defaultRule(), imageChange(set("staging", "metadata", "annotations", AnnotationInstallationID)).Build()),
			Want:   admission.Allowed(`argocd.argoproj.io/installation-id is "staging" and the guarded Argo CD's installationID "": another Argo CD instance tracks the object`),
		},
		"ItsOwnInstallationsObjectIsGuarded": {
			Reason: "With installationID set, the objects carrying it are this instance's.",
			Args:   gitopstest.Send(newRule(Config{InstallationID: "prod"}, obj(guestbookApp)), imageChange(set("prod", "metadata", "annotations", AnnotationInstallationID)).Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ChangingTheInstallationIDIsRefused": {
			Reason: "Pointing an object at another instance would take it out of the guard.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("staging", "metadata", "annotations", AnnotationInstallationID))).User("system:serviceaccount:ops:x").Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1installation-id." + inGit),
		},
		"ServerEditIsRefusedByDefault": {
			Reason: "argocd-server writes what people edit in the UI: a hand edit like any other.",
			Args:   gitopstest.Send(defaultRule(), imageChange().User(argoServer, "system:serviceaccounts", "system:serviceaccounts:argocd").Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ServerEditIsAllowedWhenUIEditsAreGitOps": {
			Reason: "uiEditsAreGitOps trusts argocd-server's writes as Argo CD's own.",
			Args:   gitopstest.Send(newRule(Config{UIEditsAreGitOps: true}, obj(guestbookApp)), imageChange().User(argoServer).Build()),
			Want:   admission.Allowed("written by Argo CD's application controller"),
		},

		// Which objects are Argo CD's.
		"CopiedTrackingIDIsNotAClaim": {
			Reason: "Argo CD ignores a tracking id that names another object (copied with a manifest); so does the guard.",
			Args:   gitopstest.Send(defaultRule(), imageChange(named("", "web-canary")).Build()),
			Want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"TrackingIDOfAnotherNamespaceIsNotAClaim": {
			Reason: "A namespaced object's id must name its namespace.",
			Args:   gitopstest.Send(defaultRule(), imageChange(named("staging", "web")).Build()),
			Want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"TrackingIDOfAnotherKindIsNotAClaim": {
			Reason: "The id's group and kind must be the object's.",
			Args:   gitopstest.Send(defaultRule(), imageChange(trackedAs("guestbook:/Service:default/web")).Build()),
			Want:   admission.Allowed("argocd.argoproj.io/tracking-id names /Service default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"UnparsableTrackingIDIsNotAClaim": {
			Reason: "An id Argo CD cannot parse tracks nothing.",
			Args:   gitopstest.Send(defaultRule(), imageChange(trackedAs("guestbook")).Build()),
			Want:   admission.Allowed(`argocd.argoproj.io/tracking-id "guestbook" does not parse: Argo CD does not track the object by it`),
		},
		"ApplicationOutsideTheControlPlaneIsLookedUpInItsNamespace": {
			Reason: "An Application in team-a is named team-a_web in ids, and looked up as team-a/web.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, named("team-a", "web"), set("team-a", "spec", "destination", "namespace"),
				set([]any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "team-a", "name": "web"}}, "status", "resources"))),
				imageChange(named("team-a", "web"), trackedAs("team-a_web:apps/Deployment:team-a/web")).Build()),
			Want: admission.Denied("argocdguard: Deployment team-a/web is managed by Argo CD Application team-a/web (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application team-a/web" + emergency),
		},
		"ControlPlaneApplicationNamedWithItsNamespace": {
			Reason: "Argo CD names an Application of its own namespace by its name alone, and follows an id naming it argocd_guestbook only for objects in Git.",
			Args:   gitopstest.Send(defaultRule(), imageChange(named("", "api"), trackedAs("argocd_guestbook:apps/Deployment:default/api")).Build()),
			Want: admission.Allowed("Argo CD Application argocd/guestbook does not list the object in its status.resources: its argocd.argoproj.io/tracking-id names the Application argocd_guestbook, " +
				"where Argo CD writes guestbook, so the id alone does not make it Argo CD's"),
		},
		"ControlPlaneApplicationNamedWithItsNamespaceListed": {
			Reason: "An object in Git is Argo CD's whatever its id says of the Application: status.resources lists it.",
			Args:   gitopstest.Send(defaultRule(), imageChange(trackedAs("argocd_guestbook:apps/Deployment:default/web")).Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ConfiguredControlPlaneNamespace": {
			Reason: "controlPlaneNamespace is where an id's bare Application name is looked up.",
			Args: gitopstest.Send(newRule(Config{ControlPlaneNamespace: "gitops"}, obj(guestbookApp, named("gitops", "guestbook"))),
				imageChange().Build()),
			Want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application gitops/guestbook (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application gitops/guestbook" + emergency),
		},
		"ApplicationNotFoundIsNotArgoCDs": {
			Reason: "An id naming an Application that does not exist: nothing reverts the object.",
			Args:   gitopstest.Send(newRule(Config{}), imageChange().Build()),
			Want:   admission.Allowed("owner not found: Argo CD Application argocd/guestbook does not exist, so Argo CD does not manage the object"),
		},
		"CacheErrorIsAnError": {
			Reason: "A cache that cannot answer is an error for the failure policy, not a guess.",
			Args: gitopstest.Send(New(Config{}, "steward:break-glass").WithApplications(&fakeApps{err: errors.New("argoproj.io/applications: the cache has not synced")}),
				imageChange().Build()),
			Want: admission.Errored(http.StatusServiceUnavailable, errors.New("looking up Argo CD Application argocd/guestbook: argoproj.io/applications: the cache has not synced")),
		},
		"ObjectListedForPruningMayBeEdited": {
			Reason: "An object Argo CD would prune is no longer in Git: there is nothing to revert it to.",
			Args:   gitopstest.Send(defaultRule(), imageChange(named("", "old-worker"), trackedAs("guestbook:apps/Deployment:default/old-worker")).Build()),
			Want:   admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"ObjectListedForPruningMayBeDeleted": {
			Reason: "Deleting what Argo CD would prune anyway is no hand edit.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment",
				web(named("", "old-worker"), trackedAs("guestbook:apps/Deployment:default/old-worker"))).Build()),
			Want: admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"SkipReconcileAllowsWithAWarning": {
			Reason: "An Application with skip-reconcile=true is paused: edits stay, and the warning says until when.",
			Args:   gitopstest.Send(newRule(Config{}, obj(guestbookApp, set("true", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))), imageChange().Build()),
			Want: admission.Allowed("Argo CD Application argocd/guestbook has argocd.argoproj.io/skip-reconcile=true").WithWarnings(
				"argocdguard: Deployment default/web is managed by " + guestbook + ", and Argo CD Application argocd/guestbook has argocd.argoproj.io/skip-reconcile=true: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"SkipReconcileFalseIsNoPause": {
			Reason: "skip-reconcile is read as strconv.ParseBool reads it: false pauses nothing.",
			Args:   gitopstest.Send(newRule(Config{}, obj(guestbookApp, set("False", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))), imageChange().Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},

		// The Application's ignoreDifferences.
		"IgnoreDifferencesLetTheChangeThrough": {
			Reason: "A JSON pointer of ignoreDifferences for the object's group and kind is a field Argo CD does not compare.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas", "/spec/template/spec/containers/0/image"}}))),
				imageChange().Build()),
			Want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesWithMatchingNameAndNamespace": {
			Reason: "An entry limited to the object's name and namespace applies to it.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "name": "web", "namespace": "default", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAnotherName": {
			Reason: "An entry for another object's name does not apply.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "name": "api", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForAnotherNamespace": {
			Reason: "An entry for another namespace does not apply.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "namespace": "staging", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForAnotherGroup": {
			Reason: "The group must match: the core group is not apps.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"kind": "Deployment", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesDoNotHideOtherChanges": {
			Reason: "An ignored pointer lets only its own fields through.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}))),
				admissiontest.Update(deploymentsGVR, "Deployment", web(), web(set(5, "spec", "replicas"), container(0, "image", "ghcr.io/example/web:1.5.0"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForEveryKind": {
			Reason: "Argo CD matches an entry's group and kind as globs: \"*\" is every group and kind.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "*", "kind": "*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAGlobOfKinds": {
			Reason: "A glob names several kinds.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "{apps,extensions}", "kind": "Deploy*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAGlobOfOtherKinds": {
			Reason: "A glob that does not match the kind does not apply.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "*", "kind": "Stateful*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"JQPathExpressionsAreNotEvaluated": {
			Reason: "jqPathExpressions are not evaluated: the change is refused.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jqPathExpressions": []any{".spec.template.spec.containers[].image"}}))),
				imageChange().Build()),
			Want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ConfiguredIgnoredFields": {
			Reason: "ignoredFields add paths for every Application.",
			Args: gitopstest.Send(newRule(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/spec/containers/0/image"}}}}}, obj(guestbookApp)),
				imageChange().Build()),
			Want: admission.Allowed(noChange),
		},

		// Claiming objects.
		"SpoofedCreateIsRefused": {
			Reason: "Only Argo CD's application controller creates objects whose tracking id names them.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", web()).Build()),
			Want: admission.Denied("argocdguard: Deployment default/web carries Argo CD's ownership annotation argocd.argoproj.io/tracking-id (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateWithACopiedIDIsAllowed": {
			Reason: "A manifest copied from a synced object keeps its id, which names the original: Argo CD ignores it.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", web(named("", "web-copy"))).Build()),
			Want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"UpdateGivingAnObjectItsIDIsRefused": {
			Reason: "Adding a self-referencing id to an existing object claims it for Argo CD.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(del("metadata", "annotations", AnnotationTrackingID)), web()).Build()),
			Want: admission.Denied("argocdguard: Deployment default/web would gain Argo CD's ownership annotation argocd.argoproj.io/tracking-id (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"RewritingTheIDToAnotherObjectIsRefused": {
			Reason: "Pointing the id elsewhere would make Argo CD disown the object: it is a change of the id.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(trackedAs("guestbook:apps/Deployment:default/other"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1tracking-id." + inGit),
		},
		"RewritingTheIDToAnotherApplicationIsRefused": {
			Reason: "Moving the object to another Application is a change of the id too.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(trackedAs("other:apps/Deployment:default/web"))).Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1tracking-id." + inGit),
		},
		"RemovingTheIDIsRefusedAsStripping": {
			Reason: "Without its id, Argo CD and this guard lose sight of the object.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(del("metadata", "annotations", AnnotationTrackingID))).Build()),
			Want: admission.Denied(managedBy + " Removing Argo CD's ownership annotation argocd.argoproj.io/tracking-id is refused: it would hide the object from Argo CD while it still runs as deployed from Git." + inGit),
		},
		"AddingAnOwnerIsRefused": {
			Reason: "An owner reference is a delete deferred to whoever controls the owner.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(owner, "metadata", "ownerReferences"))).Build()),
			Want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"AddingAnOwnerThroughStatusIsRefused": {
			Reason: "A status write stores the object's metadata too.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(owner, "metadata", "ownerReferences"))).SubResource("status").Build()),
			Want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"StatusWriteIsAllowed": {
			Reason: "Status is observed state, not what Argo CD syncs.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(2, "status", "readyReplicas"))).SubResource("status").Build()),
			Want: admission.Allowed(noChange),
		},
		"DeleteIsRefused": {
			Reason: "Argo CD would re-create a deleted object.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", web()).Build()),
			Want:   admission.Denied(managedBy + deleting),
		},
		"ClusterScopedObjectCarriesTheDestinationNamespace": {
			Reason: "A ClusterRole's id holds the Application's destination namespace; Argo CD tracks it by group, kind and name.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole", webReader).Build()),
			Want:   admission.Denied("argocdguard: ClusterRole web-reader is managed by " + guestbook + "; " + selfHeals + "." + deleting),
		},
		"ColonInANameIsPartOfTheName": {
			Reason: "Argo CD splits an id at its first two colons: a ClusterRole named with colons is still named by its id.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole", obj(`{}`, set(webReader["rules"], "rules"),
				set(map[string]any{"name": "system:web-reader", "annotations": map[string]any{AnnotationTrackingID: "guestbook:rbac.authorization.k8s.io/ClusterRole:default/system:web-reader"}}, "metadata"))).Build()),
			Want: admission.Denied("argocdguard: ClusterRole system:web-reader is managed by " + guestbook + "; " + selfHeals + "." + deleting),
		},

		// Control writes on an Application that is itself synced.
		"RefreshOfATrackedApplicationIsAllowed": {
			Reason: "argocd app get --refresh annotates the Application: a control write, not an edit.",
			Args: gitopstest.Send(newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("normal", "metadata", "annotations", "argocd.argoproj.io/refresh"))).Build()),
			Want: admission.Allowed(noChange),
		},
		"SyncOperationOfATrackedApplicationIsAllowed": {
			Reason: "argocd app sync writes /operation: a control write.",
			Args: gitopstest.Send(newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set(map[string]any{"sync": map[string]any{"revision": "HEAD"}, "initiatedBy": map[string]any{"username": "jane"}}, "operation"))).Build()),
			Want: admission.Allowed(noChange),
		},
		"PausingATrackedApplicationIsAllowed": {
			Reason: "Setting skip-reconcile on an Application pauses it: a control write.",
			Args: gitopstest.Send(newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("true", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))).Build()),
			Want: admission.Allowed(noChange),
		},
		"EditingATrackedApplicationIsRefused": {
			Reason: "Changing what a synced Application deploys is a hand edit of Git's content.",
			Args: gitopstest.Send(newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("v2", "spec", "source", "targetRevision"), set("hard", "metadata", "annotations", "argocd.argoproj.io/refresh"))).Build()),
			Want: admission.Denied(rootManagesGuestbook + " Changed: /spec/source/targetRevision. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/root" + emergency),
		},

		// The Applications' records.
		"RewritingAnApplicationsResourcesIsRefused": {
			Reason: "status.resources tells the guard which objects are Argo CD's and which it would prune: only Argo CD writes it.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp),
				obj(guestbookApp, set([]any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web", "requiresPruning": true}}, "status", "resources"))).Build()),
			Want: admission.Denied("argocdguard: Application argocd/guestbook's status.resources is Argo CD's record of the objects it manages, which argocdguard reads to tell them from look-alikes; " +
				"only Argo CD's application controller writes it. Changed: /status/resources" + emergency),
		},
		"ControllerWritesTheRecord": {
			Reason: "The application controller writes status.resources after every comparison.",
			Args: gitopstest.Send(defaultRule(), admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp),
				obj(guestbookApp, set([]any{}, "status", "resources"))).User(argoController).Build()),
			Want: admission.Allowed("written by Argo CD's application controller"),
		},

		// Opt-outs.
		"OptOutByAnOptOutGroupMemberIsAllowed": {
			Reason: "A member of optOutGroups may add Argo CD's sync-options as a change of its own.",
			Args: gitopstest.Send(newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("Prune=false", "metadata", "annotations", "argocd.argoproj.io/sync-options"))).User("jane", "platform-admins").Build()),
			Want: admission.Allowed("opt-out /metadata/annotations/argocd.argoproj.io~1sync-options set by jane, a member of an opt-out group"),
		},
		"OptOutByOthersIsRefused": {
			Reason: "Someone outside optOutGroups may not add an opt-out.",
			Args: gitopstest.Send(newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("Prune=false", "metadata", "annotations", "argocd.argoproj.io/sync-options"))).Build()),
			Want: admission.Denied(managedBy + " Adding an opt-out (/metadata/annotations/argocd.argoproj.io~1sync-options) is refused: it stops Argo CD from managing the object, and may be set by only members of platform-admins, as a change of its own." + inGit),
		},
		"OptOutWithOtherChangesIsRefused": {
			Reason: "An opt-out group member's opt-out must come alone.",
			Args: gitopstest.Send(newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("IgnoreExtraneous", "metadata", "annotations", "argocd.argoproj.io/compare-options"), container(0, "image", "x"))).User("jane", "platform-admins").Build()),
			Want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1compare-options, /spec/template/spec/containers/0/image." + inGit),
		},

		// Tracking by label.
		"LabelledAndListedObjectIsArgoCDs": {
			Reason: "With trackingLabel set, an object labelled with the instance and listed in status.resources is Argo CD's.",
			Args: gitopstest.Send(newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("web-config", "info"), webConfig("web-config", "debug")).Build()),
			Want: admission.Denied("argocdguard: ConfigMap default/web-config is managed by " + guestbook + "; " + selfHeals + ". Changed: /data/LOG_LEVEL." + inGit),
		},
		"LabelledButUnlistedObjectIsNotArgoCDs": {
			Reason: "Charts copy the instance label everywhere: without a status.resources entry it proves nothing.",
			Args: gitopstest.Send(newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("chart-made", "info"), webConfig("chart-made", "debug")).Build()),
			Want: admission.Allowed("Argo CD Application argocd/guestbook does not list the object in its status.resources: its app.kubernetes.io/instance label alone does not make it Argo CD's"),
		},
		"CreateWithTheLabelIsRefused": {
			Reason: "With trackingLabel set, the label claims an object as the id does: Argo CD's label tracking would prune a hand-made one.",
			Args: gitopstest.Send(newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Create(configmapsGVR, "ConfigMap", webConfig("chart-made", "info")).Build()),
			Want: admission.Denied("argocdguard: ConfigMap default/chart-made carries Argo CD's ownership label app.kubernetes.io/instance (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"LabelIsIgnoredUnlessConfigured": {
			Reason: "Without trackingLabel, the instance label tracks nothing.",
			Args:   gitopstest.Send(defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("web-config", "info"), webConfig("web-config", "debug")).Build()),
			Want:   admission.Allowed(""),
		},

		// The scale subresource.
		"ScaleOfAListedDeploymentIsRefused": {
			Reason: "A Scale carries no annotations; the Applications' status.resources name the workload.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest("web", 3, 5).Build()),
			Want:   admission.Denied(managedBy + " Changed: /spec/replicas." + inGit),
		},
		"HPAScaleOfAListedDeploymentIsAllowed": {
			Reason: "The HorizontalPodAutoscaler's scale is its job (and never sent); where Git declares replicas too, the audit reports the fight.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest("web", 3, 4).User(hpaController).Build()),
			Want:   admission.Allowed("scaled by the autoscaler " + hpaController),
		},
		"ScaleWithReplicasIgnoredIsAllowed": {
			Reason: "The Application's ignoreDifferences apply on the scale path.",
			Args: gitopstest.Send(newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}))),
				scaleRequest("web", 3, 5).Build()),
			Want: admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleOfAnUnlistedDeploymentIsAllowed": {
			Reason: "A workload no Application lists is not Argo CD's.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest("api", 3, 5).Build()),
			Want:   admission.Allowed(""),
		},
		"ScaleOfADeploymentListedForPruningIsAllowed": {
			Reason: "A workload about to be pruned may be scaled.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest("old-worker", 1, 0).Build()),
			Want:   admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"ScaleByTheControllerIsAllowed": {
			Reason: "The controller is trusted on the scale path too.",
			Args:   gitopstest.Send(defaultRule(), scaleRequest("web", 3, 5).User(argoController).Build()),
			Want:   admission.Allowed("written by Argo CD's application controller"),
		},
		"ScaleWithCacheErrorIsAnError": {
			Reason: "An unsynced cache is an error on the scale path too (the scale webhook fails open).",
			Args: gitopstest.Send(New(Config{}, "steward:break-glass").WithApplications(&fakeApps{err: errors.New("argoproj.io/applications: the cache has not synced")}),
				scaleRequest("web", 3, 5).Build()),
			Want: admission.Errored(http.StatusServiceUnavailable, errors.New("listing Argo CD Applications: argoproj.io/applications: the cache has not synced")),
		},
	}
	gitopstest.TestHandle(t, cases, func(t *testing.T, a gitopstest.Args, got admission.Response) {
		requireSentWhenActing(t, a.Rule.(*Rule), a.Req, got)
	})
}

// requireSentWhenActing checks the matchConditions against the answer: a
// request the rule refuses or warns about must be one the API server
// sends, or the rule would never act on it.
func requireSentWhenActing(t *testing.T, r *Rule, req admission.Request, got admission.Response) {
	t.Helper()
	if got.Allowed && len(got.Warnings) == 0 {
		return
	}
	wh := r.Spec().Webhooks[0]
	switch {
	case req.SubResource == "scale":
		wh = r.Spec().Webhooks[2]
	case req.Resource.Resource == "applications" && strings.Contains(got.Result.Message, "'s status.resources is Argo CD's record"):
		wh = r.Spec().Webhooks[3]
	case gitops.ServiceAccount(req.UserInfo) && !slices.Contains(r.people, req.UserInfo.Username):
		wh = r.Spec().Webhooks[1]
	}
	celtest.RequireSent(t, wh, req, fmt.Sprintf("%+v", got.Result))
}

// scaleRequest is an UPDATE of a Deployment's scale subresource, as the
// API server sends it.
func scaleRequest(name string, from, to int) *admissiontest.Request {
	return admissiontest.Update(deploymentsGVR, "Scale", scaleObject(name, from), scaleObject(name, to)).
		SubResource("scale").
		RequestKind(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, "deployments")
}
