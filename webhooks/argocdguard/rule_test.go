package argocdguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/celtest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
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
	type args struct {
		rule *Rule
		req  admission.Request
	}
	web := func(edits ...func(map[string]any)) map[string]any { return obj(webDeployment, edits...) }
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "1"}}
	cases := map[string]struct {
		reason string
		args   args
		want   admission.Response
	}{
		// Who writes.
		"ControllerUpdateIsAllowed": {
			reason: "Argo CD's application controller syncs from Git; its writes are the desired state.",
			args: args{defaultRule(), imageChange().
				User(argoController, "system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated").Build()},
			want: admission.Allowed("written by Argo CD's application controller"),
		},
		"GarbageCollectorDeleteIsAllowed": {
			reason: "Kubernetes' controllers are never refused.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", web()).User(garbageCollectr).Build()},
			want:   admission.Allowed("written by a Kubernetes controller"),
		},
		"HumanImageChangeIsRefused": {
			reason: "A hand edit of a synced object is refused with the whole explanation on one line: the Application, its source and revision, and that self-heal reverts it.",
			args:   args{defaultRule(), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				"it is reverted at Argo CD's next self-heal (self-heal is on). Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; " +
				"to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/guestbook; in an emergency repeat the request as a member of steward:break-glass."),
		},
		"WithoutSelfHealTheChangeStaysUntilTheNextSync": {
			reason: "With automated sync but no self-heal, Argo CD leaves a hand edit in place until the next sync; the message says so.",
			args:   args{newRule(Config{}, obj(guestbookApp, del("spec", "syncPolicy", "automated", "selfHeal"))), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; self-heal is off, so the change stays until the next sync from Git, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"WithoutAutomatedSyncTheChangeStaysUntilSomeoneSyncs": {
			reason: "Without automated sync, a hand edit stays until a sync overwrites it.",
			args:   args{newRule(Config{}, obj(guestbookApp, del("spec", "syncPolicy", "automated"))), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; automated sync is off, so the change stays until the next sync from Git overwrites it, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AutomatedSyncDisabledTurnsSelfHealOff": {
			reason: "automated.enabled: false (Argo CD 3) switches automated sync off, and self-heal with it.",
			args:   args{newRule(Config{}, obj(guestbookApp, set(false, "spec", "syncPolicy", "automated", "enabled"))), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by " + guestbook +
				"; automated sync is off, so the change stays until the next sync from Git overwrites it, and the Application shows OutOfSync meanwhile. Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"SourcesNameTheFirstSource": {
			reason: "An Application with several sources is named by the first and its revision (status.sync.revisions); a chart source by its chart, and its revision, the chart's version, whole.",
			args: args{newRule(Config{}, obj(guestbookApp, del("spec", "source"), set([]any{
				map[string]any{"repoURL": "https://charts.example.com", "chart": "web", "targetRevision": "1.24.*"},
				map[string]any{"repoURL": "https://github.com/example/values", "ref": "values"},
			}, "spec", "sources"), del("status", "sync", "revision"),
				set([]any{"1.24.10-rc.1", "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b"}, "status", "sync", "revisions"))), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo https://charts.example.com, chart web, target 1.24.*, revision 1.24.10-rc.1); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"OCIDigestIsShortened": {
			reason: "An OCI source's revision is a digest, shortened as a commit is.",
			args: args{newRule(Config{}, obj(guestbookApp, set(map[string]any{"repoURL": "oci://ghcr.io/example/manifests", "path": ".", "targetRevision": "1.4.2"}, "spec", "source"),
				set("sha256:9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c", "status", "sync", "revision"))), imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application argocd/guestbook (repo oci://ghcr.io/example/manifests, path ., target 1.4.2, revision sha256:9b1c2d3); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"AnotherInstallationsObjectIsAllowed": {
			reason: "An object another Argo CD instance synced carries its installation id: this instance does not track it.",
			args:   args{defaultRule(), imageChange(set("staging", "metadata", "annotations", AnnotationInstallationID)).Build()},
			want:   admission.Allowed(`argocd.argoproj.io/installation-id is "staging" and the guarded Argo CD's installationID "": another Argo CD instance tracks the object`),
		},
		"ItsOwnInstallationsObjectIsGuarded": {
			reason: "With installationID set, the objects carrying it are this instance's.",
			args:   args{newRule(Config{InstallationID: "prod"}, obj(guestbookApp)), imageChange(set("prod", "metadata", "annotations", AnnotationInstallationID)).Build()},
			want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ChangingTheInstallationIDIsRefused": {
			reason: "Pointing an object at another instance would take it out of the guard.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
				obj(webDeployment, set("staging", "metadata", "annotations", AnnotationInstallationID))).User("system:serviceaccount:ops:x").Build()},
			want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1installation-id." + inGit),
		},
		"ServerEditIsRefusedByDefault": {
			reason: "argocd-server writes what people edit in the UI: a hand edit like any other.",
			args:   args{defaultRule(), imageChange().User(argoServer, "system:serviceaccounts", "system:serviceaccounts:argocd").Build()},
			want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ServerEditIsAllowedWhenUIEditsAreGitOps": {
			reason: "uiEditsAreGitOps trusts argocd-server's writes as Argo CD's own.",
			args:   args{newRule(Config{UIEditsAreGitOps: true}, obj(guestbookApp)), imageChange().User(argoServer).Build()},
			want:   admission.Allowed("written by Argo CD's application controller"),
		},

		// Which objects are Argo CD's.
		"CopiedTrackingIDIsNotAClaim": {
			reason: "Argo CD ignores a tracking id that names another object (copied with a manifest); so does the guard.",
			args:   args{defaultRule(), imageChange(named("", "web-canary")).Build()},
			want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"TrackingIDOfAnotherNamespaceIsNotAClaim": {
			reason: "A namespaced object's id must name its namespace.",
			args:   args{defaultRule(), imageChange(named("staging", "web")).Build()},
			want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"TrackingIDOfAnotherKindIsNotAClaim": {
			reason: "The id's group and kind must be the object's.",
			args:   args{defaultRule(), imageChange(trackedAs("guestbook:/Service:default/web")).Build()},
			want:   admission.Allowed("argocd.argoproj.io/tracking-id names /Service default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"UnparsableTrackingIDIsNotAClaim": {
			reason: "An id Argo CD cannot parse tracks nothing.",
			args:   args{defaultRule(), imageChange(trackedAs("guestbook")).Build()},
			want:   admission.Allowed(`argocd.argoproj.io/tracking-id "guestbook" does not parse: Argo CD does not track the object by it`),
		},
		"ApplicationOutsideTheControlPlaneIsLookedUpInItsNamespace": {
			reason: "An Application in team-a is named team-a_web in ids, and looked up as team-a/web.",
			args: args{newRule(Config{}, obj(guestbookApp, named("team-a", "web"), set("team-a", "spec", "destination", "namespace"),
				set([]any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "team-a", "name": "web"}}, "status", "resources"))),
				imageChange(named("team-a", "web"), trackedAs("team-a_web:apps/Deployment:team-a/web")).Build()},
			want: admission.Denied("argocdguard: Deployment team-a/web is managed by Argo CD Application team-a/web (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application team-a/web" + emergency),
		},
		"ControlPlaneApplicationNamedWithItsNamespace": {
			reason: "Argo CD names an Application of its own namespace by its name alone, and follows an id naming it argocd_guestbook only for objects in Git.",
			args:   args{defaultRule(), imageChange(named("", "api"), trackedAs("argocd_guestbook:apps/Deployment:default/api")).Build()},
			want: admission.Allowed("Argo CD Application argocd/guestbook does not list the object in its status.resources: its argocd.argoproj.io/tracking-id names the Application argocd_guestbook, " +
				"where Argo CD writes guestbook, so the id alone does not make it Argo CD's"),
		},
		"ControlPlaneApplicationNamedWithItsNamespaceListed": {
			reason: "An object in Git is Argo CD's whatever its id says of the Application: status.resources lists it.",
			args:   args{defaultRule(), imageChange(trackedAs("argocd_guestbook:apps/Deployment:default/web")).Build()},
			want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ConfiguredControlPlaneNamespace": {
			reason: "controlPlaneNamespace is where an id's bare Application name is looked up.",
			args: args{newRule(Config{ControlPlaneNamespace: "gitops"}, obj(guestbookApp, named("gitops", "guestbook"))),
				imageChange().Build()},
			want: admission.Denied("argocdguard: Deployment default/web is managed by Argo CD Application gitops/guestbook (repo https://github.com/example/apps, path guestbook, target HEAD, revision 4a5b6c7); " +
				selfHeals + ". Changed: /spec/template/spec/containers/0/image. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application gitops/guestbook" + emergency),
		},
		"ApplicationNotFoundIsNotArgoCDs": {
			reason: "An id naming an Application that does not exist: nothing reverts the object.",
			args:   args{newRule(Config{}), imageChange().Build()},
			want:   admission.Allowed("owner not found: Argo CD Application argocd/guestbook does not exist, so Argo CD does not manage the object"),
		},
		"CacheErrorIsAnError": {
			reason: "A cache that cannot answer is an error for the failure policy, not a guess.",
			args: args{New(Config{}, "steward:break-glass").WithApplications(&fakeApps{err: errors.New("argoproj.io/applications: the cache has not synced")}),
				imageChange().Build()},
			want: admission.Errored(http.StatusServiceUnavailable, errors.New("looking up Argo CD Application argocd/guestbook: argoproj.io/applications: the cache has not synced")),
		},
		"ObjectListedForPruningMayBeEdited": {
			reason: "An object Argo CD would prune is no longer in Git: there is nothing to revert it to.",
			args:   args{defaultRule(), imageChange(named("", "old-worker"), trackedAs("guestbook:apps/Deployment:default/old-worker")).Build()},
			want:   admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"ObjectListedForPruningMayBeDeleted": {
			reason: "Deleting what Argo CD would prune anyway is no hand edit.",
			args: args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment",
				web(named("", "old-worker"), trackedAs("guestbook:apps/Deployment:default/old-worker"))).Build()},
			want: admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"SkipReconcileAllowsWithAWarning": {
			reason: "An Application with skip-reconcile=true is paused: edits stay, and the warning says until when.",
			args:   args{newRule(Config{}, obj(guestbookApp, set("true", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))), imageChange().Build()},
			want: admission.Allowed("Argo CD Application argocd/guestbook has argocd.argoproj.io/skip-reconcile=true").WithWarnings(
				"argocdguard: Deployment default/web is managed by " + guestbook + ", and Argo CD Application argocd/guestbook has argocd.argoproj.io/skip-reconcile=true: the change is allowed and recorded; it stays until the owner resumes."),
		},
		"SkipReconcileFalseIsNoPause": {
			reason: "skip-reconcile is read as strconv.ParseBool reads it: false pauses nothing.",
			args:   args{newRule(Config{}, obj(guestbookApp, set("False", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))), imageChange().Build()},
			want:   admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},

		// The Application's ignoreDifferences.
		"IgnoreDifferencesLetTheChangeThrough": {
			reason: "A JSON pointer of ignoreDifferences for the object's group and kind is a field Argo CD does not compare.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas", "/spec/template/spec/containers/0/image"}}))),
				imageChange().Build()},
			want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesWithMatchingNameAndNamespace": {
			reason: "An entry limited to the object's name and namespace applies to it.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "name": "web", "namespace": "default", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAnotherName": {
			reason: "An entry for another object's name does not apply.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "name": "api", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForAnotherNamespace": {
			reason: "An entry for another namespace does not apply.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "namespace": "staging", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForAnotherGroup": {
			reason: "The group must match: the core group is not apps.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"kind": "Deployment", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesDoNotHideOtherChanges": {
			reason: "An ignored pointer lets only its own fields through.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}))),
				admissiontest.Update(deploymentsGVR, "Deployment", web(), web(set(5, "spec", "replicas"), container(0, "image", "ghcr.io/example/web:1.5.0"))).Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"IgnoreDifferencesForEveryKind": {
			reason: "Argo CD matches an entry's group and kind as globs: \"*\" is every group and kind.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "*", "kind": "*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAGlobOfKinds": {
			reason: "A glob names several kinds.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "{apps,extensions}", "kind": "Deploy*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Allowed(noChange),
		},
		"IgnoreDifferencesForAGlobOfOtherKinds": {
			reason: "A glob that does not match the kind does not apply.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "*", "kind": "Stateful*", "jsonPointers": []any{"/spec/template/spec/containers"}}))),
				imageChange().Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"JQPathExpressionsAreNotEvaluated": {
			reason: "jqPathExpressions are not evaluated: the change is refused.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jqPathExpressions": []any{".spec.template.spec.containers[].image"}}))),
				imageChange().Build()},
			want: admission.Denied(managedBy + " Changed: /spec/template/spec/containers/0/image." + inGit),
		},
		"ConfiguredIgnoredFields": {
			reason: "ignoredFields add paths for every Application.",
			args: args{newRule(Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/template/spec/containers/0/image"}}}}}, obj(guestbookApp)),
				imageChange().Build()},
			want: admission.Allowed(noChange),
		},

		// Claiming objects.
		"SpoofedCreateIsRefused": {
			reason: "Only Argo CD's application controller creates objects whose tracking id names them.",
			args:   args{defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", web()).Build()},
			want: admission.Denied("argocdguard: Deployment default/web carries Argo CD's ownership annotation argocd.argoproj.io/tracking-id (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"CreateWithACopiedIDIsAllowed": {
			reason: "A manifest copied from a synced object keeps its id, which names the original: Argo CD ignores it.",
			args:   args{defaultRule(), admissiontest.Create(deploymentsGVR, "Deployment", web(named("", "web-copy"))).Build()},
			want:   admission.Allowed("argocd.argoproj.io/tracking-id names apps/Deployment default/web, not this object (a copied annotation): Argo CD does not track the object by it"),
		},
		"UpdateGivingAnObjectItsIDIsRefused": {
			reason: "Adding a self-referencing id to an existing object claims it for Argo CD.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(del("metadata", "annotations", AnnotationTrackingID)), web()).Build()},
			want: admission.Denied("argocdguard: Deployment default/web would gain Argo CD's ownership annotation argocd.argoproj.io/tracking-id (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"RewritingTheIDToAnotherObjectIsRefused": {
			reason: "Pointing the id elsewhere would make Argo CD disown the object: it is a change of the id.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(trackedAs("guestbook:apps/Deployment:default/other"))).Build()},
			want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1tracking-id." + inGit),
		},
		"RewritingTheIDToAnotherApplicationIsRefused": {
			reason: "Moving the object to another Application is a change of the id too.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(trackedAs("other:apps/Deployment:default/web"))).Build()},
			want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1tracking-id." + inGit),
		},
		"RemovingTheIDIsRefusedAsStripping": {
			reason: "Without its id, Argo CD and this guard lose sight of the object.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(del("metadata", "annotations", AnnotationTrackingID))).Build()},
			want: admission.Denied(managedBy + " Removing Argo CD's ownership annotation argocd.argoproj.io/tracking-id is refused: it would hide the object from Argo CD while it still runs as deployed from Git." + inGit),
		},
		"AddingAnOwnerIsRefused": {
			reason: "An owner reference is a delete deferred to whoever controls the owner.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(owner, "metadata", "ownerReferences"))).Build()},
			want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"AddingAnOwnerThroughStatusIsRefused": {
			reason: "A status write stores the object's metadata too.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(owner, "metadata", "ownerReferences"))).SubResource("status").Build()},
			want: admission.Denied(managedBy + " Adding the owner reference ConfigMap owner is refused: the garbage collector would delete the object when that owner is deleted, outside Git." + inGit),
		},
		"StatusWriteIsAllowed": {
			reason: "Status is observed state, not what Argo CD syncs.",
			args: args{defaultRule(), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set(2, "status", "readyReplicas"))).SubResource("status").Build()},
			want: admission.Allowed(noChange),
		},
		"DeleteIsRefused": {
			reason: "Argo CD would re-create a deleted object.",
			args:   args{defaultRule(), admissiontest.Delete(deploymentsGVR, "Deployment", web()).Build()},
			want:   admission.Denied(managedBy + deleting),
		},
		"ClusterScopedObjectCarriesTheDestinationNamespace": {
			reason: "A ClusterRole's id holds the Application's destination namespace; Argo CD tracks it by group, kind and name.",
			args:   args{defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole", webReader).Build()},
			want:   admission.Denied("argocdguard: ClusterRole web-reader is managed by " + guestbook + "; " + selfHeals + "." + deleting),
		},
		"ColonInANameIsPartOfTheName": {
			reason: "Argo CD splits an id at its first two colons: a ClusterRole named with colons is still named by its id.",
			args: args{defaultRule(), admissiontest.Delete(clusterRolesGVR, "ClusterRole", obj(`{}`, set(webReader["rules"], "rules"),
				set(map[string]any{"name": "system:web-reader", "annotations": map[string]any{AnnotationTrackingID: "guestbook:rbac.authorization.k8s.io/ClusterRole:default/system:web-reader"}}, "metadata"))).Build()},
			want: admission.Denied("argocdguard: ClusterRole system:web-reader is managed by " + guestbook + "; " + selfHeals + "." + deleting),
		},

		// Control writes on an Application that is itself synced.
		"RefreshOfATrackedApplicationIsAllowed": {
			reason: "argocd app get --refresh annotates the Application: a control write, not an edit.",
			args: args{newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("normal", "metadata", "annotations", "argocd.argoproj.io/refresh"))).Build()},
			want: admission.Allowed(noChange),
		},
		"SyncOperationOfATrackedApplicationIsAllowed": {
			reason: "argocd app sync writes /operation: a control write.",
			args: args{newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set(map[string]any{"sync": map[string]any{"revision": "HEAD"}, "initiatedBy": map[string]any{"username": "jane"}}, "operation"))).Build()},
			want: admission.Allowed(noChange),
		},
		"PausingATrackedApplicationIsAllowed": {
			reason: "Setting skip-reconcile on an Application pauses it: a control write.",
			args: args{newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("true", "metadata", "annotations", "argocd.argoproj.io/skip-reconcile"))).Build()},
			want: admission.Allowed(noChange),
		},
		"EditingATrackedApplicationIsRefused": {
			reason: "Changing what a synced Application deploys is a hand edit of Git's content.",
			args: args{newRule(Config{}, appOfApps()), admissiontest.Update(applicationsGVR, "Application",
				trackedApp(), trackedApp(set("v2", "spec", "source", "targetRevision"), set("hard", "metadata", "annotations", "argocd.argoproj.io/refresh"))).Build()},
			want: admission.Denied(rootManagesGuestbook + " Changed: /spec/source/targetRevision. Change it in the Git repository instead; to pause Argo CD, set argocd.argoproj.io/skip-reconcile=true on Argo CD Application argocd/root" + emergency),
		},

		// The Applications' records.
		"RewritingAnApplicationsResourcesIsRefused": {
			reason: "status.resources tells the guard which objects are Argo CD's and which it would prune: only Argo CD writes it.",
			args: args{defaultRule(), admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp),
				obj(guestbookApp, set([]any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web", "requiresPruning": true}}, "status", "resources"))).Build()},
			want: admission.Denied("argocdguard: Application argocd/guestbook's status.resources is Argo CD's record of the objects it manages, which argocdguard reads to tell them from look-alikes; " +
				"only Argo CD's application controller writes it. Changed: /status/resources" + emergency),
		},
		"ControllerWritesTheRecord": {
			reason: "The application controller writes status.resources after every comparison.",
			args: args{defaultRule(), admissiontest.Update(applicationsGVR, "Application", obj(guestbookApp),
				obj(guestbookApp, set([]any{}, "status", "resources"))).User(argoController).Build()},
			want: admission.Allowed("written by Argo CD's application controller"),
		},

		// Opt-outs.
		"OptOutByAnOptOutGroupMemberIsAllowed": {
			reason: "A member of optOutGroups may add Argo CD's sync-options as a change of its own.",
			args: args{newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("Prune=false", "metadata", "annotations", "argocd.argoproj.io/sync-options"))).User("jane", "platform-admins").Build()},
			want: admission.Allowed("opt-out /metadata/annotations/argocd.argoproj.io~1sync-options set by jane, a member of an opt-out group"),
		},
		"OptOutByOthersIsRefused": {
			reason: "Someone outside optOutGroups may not add an opt-out.",
			args: args{newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("Prune=false", "metadata", "annotations", "argocd.argoproj.io/sync-options"))).Build()},
			want: admission.Denied(managedBy + " Adding an opt-out (/metadata/annotations/argocd.argoproj.io~1sync-options) is refused: it stops Argo CD from managing the object, and may be set by only members of platform-admins, as a change of its own." + inGit),
		},
		"OptOutWithOtherChangesIsRefused": {
			reason: "An opt-out group member's opt-out must come alone.",
			args: args{newRule(Config{OptOutGroups: []string{"platform-admins"}}, obj(guestbookApp)), admissiontest.Update(deploymentsGVR, "Deployment",
				web(), web(set("IgnoreExtraneous", "metadata", "annotations", "argocd.argoproj.io/compare-options"), container(0, "image", "x"))).User("jane", "platform-admins").Build()},
			want: admission.Denied(managedBy + " Changed: /metadata/annotations/argocd.argoproj.io~1compare-options, /spec/template/spec/containers/0/image." + inGit),
		},

		// Tracking by label.
		"LabelledAndListedObjectIsArgoCDs": {
			reason: "With trackingLabel set, an object labelled with the instance and listed in status.resources is Argo CD's.",
			args: args{newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("web-config", "info"), webConfig("web-config", "debug")).Build()},
			want: admission.Denied("argocdguard: ConfigMap default/web-config is managed by " + guestbook + "; " + selfHeals + ". Changed: /data/LOG_LEVEL." + inGit),
		},
		"LabelledButUnlistedObjectIsNotArgoCDs": {
			reason: "Charts copy the instance label everywhere: without a status.resources entry it proves nothing.",
			args: args{newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("chart-made", "info"), webConfig("chart-made", "debug")).Build()},
			want: admission.Allowed("Argo CD Application argocd/guestbook does not list the object in its status.resources: its app.kubernetes.io/instance label alone does not make it Argo CD's"),
		},
		"CreateWithTheLabelIsRefused": {
			reason: "With trackingLabel set, the label claims an object as the id does: Argo CD's label tracking would prune a hand-made one.",
			args: args{newRule(Config{TrackingLabel: "app.kubernetes.io/instance"}, obj(guestbookApp)),
				admissiontest.Create(configmapsGVR, "ConfigMap", webConfig("chart-made", "info")).Build()},
			want: admission.Denied("argocdguard: ConfigMap default/chart-made carries Argo CD's ownership label app.kubernetes.io/instance (Application argocd/guestbook), which only Argo CD's application controller sets; " +
				"a hand-made object with them passes for Git-managed, and Argo CD may prune or overwrite it. Remove Argo CD's keys, or add the object to the Git repository instead" + emergency),
		},
		"LabelIsIgnoredUnlessConfigured": {
			reason: "Without trackingLabel, the instance label tracks nothing.",
			args:   args{defaultRule(), admissiontest.Update(configmapsGVR, "ConfigMap", webConfig("web-config", "info"), webConfig("web-config", "debug")).Build()},
			want:   admission.Allowed(""),
		},

		// The scale subresource.
		"ScaleOfAListedDeploymentIsRefused": {
			reason: "A Scale carries no annotations; the Applications' status.resources name the workload.",
			args:   args{defaultRule(), scaleRequest("web", 3, 5).Build()},
			want:   admission.Denied(managedBy + " Changed: /spec/replicas." + inGit),
		},
		"HPAScaleOfAListedDeploymentIsAllowed": {
			reason: "The HorizontalPodAutoscaler's scale is its job (and never sent); where Git declares replicas too, the audit reports the fight.",
			args:   args{defaultRule(), scaleRequest("web", 3, 4).User(hpaController).Build()},
			want:   admission.Allowed("scaled by the autoscaler " + hpaController),
		},
		"ScaleWithReplicasIgnoredIsAllowed": {
			reason: "The Application's ignoreDifferences apply on the scale path.",
			args: args{newRule(Config{}, obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}))),
				scaleRequest("web", 3, 5).Build()},
			want: admission.Allowed("only the ignored field /spec/replicas changed"),
		},
		"ScaleOfAnUnlistedDeploymentIsAllowed": {
			reason: "A workload no Application lists is not Argo CD's.",
			args:   args{defaultRule(), scaleRequest("api", 3, 5).Build()},
			want:   admission.Allowed(""),
		},
		"ScaleOfADeploymentListedForPruningIsAllowed": {
			reason: "A workload about to be pruned may be scaled.",
			args:   args{defaultRule(), scaleRequest("old-worker", 1, 0).Build()},
			want:   admission.Allowed("Argo CD Application argocd/guestbook lists the object for pruning: it is no longer in Git"),
		},
		"ScaleByTheControllerIsAllowed": {
			reason: "The controller is trusted on the scale path too.",
			args:   args{defaultRule(), scaleRequest("web", 3, 5).User(argoController).Build()},
			want:   admission.Allowed("written by Argo CD's application controller"),
		},
		"ScaleWithCacheErrorIsAnError": {
			reason: "An unsynced cache is an error on the scale path too (the scale webhook fails open).",
			args: args{New(Config{}, "steward:break-glass").WithApplications(&fakeApps{err: errors.New("argoproj.io/applications: the cache has not synced")}),
				scaleRequest("web", 3, 5).Build()},
			want: admission.Errored(http.StatusServiceUnavailable, errors.New("listing Argo CD Applications: argoproj.io/applications: the cache has not synced")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.args.rule.Handle(context.Background(), rule.NewRequest(tc.args.req))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nHandle(...): -want, +got:\n%s", tc.reason, diff)
			}
			requireSentWhenActing(t, tc.args.rule, tc.args.req, got)
		})
	}
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
