package argocdguard

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// applied is when Argo CD last synced the tests' objects; edited is an
// hour later.
var applied, edited = gitopstest.Applied, gitopstest.Edited

var (
	deployments, statefulSets, configMaps = gitopstest.Deployments, gitopstest.StatefulSets, gitopstest.ConfigMaps
	apps                                  = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	imageField, replicasField             = gitopstest.ImageField, gitopstest.ReplicasField
)

// appCache is a gitops.OwnerCache over Applications built as the
// informer's transform builds them.
type appCache []any

func (c appCache) Lookup(_ schema.GroupResource, namespace, name string) (any, bool, error) {
	for _, obj := range c {
		if a := obj.(*application); a.Namespace == namespace && a.Name == name {
			return a, true, nil
		}
	}
	return nil, false, nil
}

func (c appCache) List(schema.GroupResource) ([]any, error) { return c, nil }

func cacheOf(t testing.TB, apps ...*unstructured.Unstructured) appCache {
	var c appCache
	for _, u := range apps {
		a, err := keepApplication(u)
		if err != nil {
			t.Fatal(err)
		}
		c = append(c, a)
	}
	return c
}

// resource is a status.resources entry for an object of gvk in apps.
func resource(gvk schema.GroupVersionKind, name string, pruning bool) any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind, "namespace": "apps", "name": name, "requiresPruning": pruning}
}

// app is the Application argocd/<name>, with self-heal on, listing
// resources.
func app(name string, spec map[string]any, resources ...any) *unstructured.Unstructured {
	s := map[string]any{
		"source":     map[string]any{"repoURL": "https://git.example.org/apps.git", "path": name, "targetRevision": "main"},
		"syncPolicy": map[string]any{"automated": map[string]any{"selfHeal": true}},
	}
	for k, v := range spec {
		s[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "argocd", "name": name},
		"spec":     s,
		"status":   map[string]any{"sync": map[string]any{"revision": "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"}, "resources": resources},
	}}
}

// tracked is an object of gvk in apps, tracked by the Application named
// by its tracking id, with the given managedFields.
func tracked(gvk schema.GroupVersionKind, name, trackingID string, managedFields ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
	var annotations map[string]string
	if trackingID != "" {
		annotations = map[string]string{AnnotationTrackingID: trackingID}
	}
	return gitopstest.Object(gvk, "apps", name, nil, annotations, managedFields...)
}

// idOf is the tracking id Argo CD's Application <app> writes on the object.
func idOf(app string, gvk schema.GroupVersionKind, name string) string {
	return app + ":" + gvk.Group + "/" + gvk.Kind + ":apps/" + name
}

// autoscaler is an HPA in namespace scaling the workload of apiVersion,
// kind and name between 1 and 10, which wants desired replicas.
func autoscaler(namespace, name, apiVersion, kind, target string, desired int32) autoscalingv2.HorizontalPodAutoscaler {
	return autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
			MaxReplicas:    10,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: desired},
	}
}

// synced is Argo CD's apply of the whole manifest.
var synced = gitopstest.Entry("argocd-controller", applied, imageField, replicasField, []string{"f:metadata", "f:annotations", "f:" + AnnotationTrackingID})

func TestAudit(t *testing.T) {
	ref := func(gvk schema.GroupVersionKind, name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: "apps", Name: name}
	}
	drift := func(gvk schema.GroupVersionKind, name, managers, fields string) rule.Finding {
		return rule.Finding{Check: gitops.CheckDrift, Result: rule.AuditFail, Object: ref(gvk, name), Properties: map[string]string{
			"managers": managers, "fields": fields, "changedAt": "2026-11-20T11:00:00Z", "changes": "1"}}
	}
	image := "/spec/template/spec/containers/[name=web]/image"
	editedImage := func(gvk schema.GroupVersionKind, name string) *metav1.PartialObjectMetadata {
		return tracked(gvk, name, idOf("web", gvk, name), synced, gitopstest.Entry("kubectl-edit", edited, imageField))
	}
	cases := map[string]struct {
		reason    string
		config    Config
		apps      []*unstructured.Unstructured
		objects   []*metav1.PartialObjectMetadata
		reader    func(*gitopstest.Reader)
		want      []rule.Finding
		wantLists []string
	}{
		"AnEditAfterArgoCDSyncedIsDrift": {
			reason:    "kubectl edit of the image after Argo CD synced the Deployment is reported, with the manager and the field.",
			apps:      []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects:   []*metav1.PartialObjectMetadata{editedImage(deployments, "web")},
			want:      []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
			wantLists: []string{"apps/v1, Kind=Deployment", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"OnlyArgoCDAndKubernetesWroteIsNoDrift": {
			reason: "Argo CD's apply and replace, and the deployment controller's writes after them, are no drift.",
			apps:   []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"), synced,
				gitopstest.Entry("argocd-application-controller", edited, replicasField),
				gitopstest.Entry("kube-controller-manager", edited, []string{"f:metadata", "f:annotations", "f:deployment.kubernetes.io/revision"}))},
		},
		"IgnoredFieldsAreNoDrift": {
			reason: "With /spec/replicas configured as ignored for Deployments, a scale is no drift.",
			config: Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}}},
			apps:   []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"), synced,
				gitopstest.Entry("kubectl", edited, replicasField))},
		},
		"TheApplicationsIgnoreDifferencesAreNoDrift": {
			reason: "A JSON pointer of the Application's ignoreDifferences is no drift; the image changed with it is.",
			apps: []*unstructured.Unstructured{app("web", map[string]any{"ignoreDifferences": []any{map[string]any{
				"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}}}}, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"), synced,
				gitopstest.Entry("kubectl-edit", edited, replicasField, imageField))},
			want: []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
		},
		"AnObjectTheApplicationDoesNotListIsNotReported": {
			reason:  "A tracking id naming the Application does not make the object Argo CD's unless its status.resources lists it.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "web"), editedImage(deployments, "extra")},
			want:    []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
		},
		"ACopiedTrackingIDIsNotReported": {
			reason:  "A tracking id naming another object is not Argo CD's claim on this one.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false), resource(deployments, "copy", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "copy", idOf("web", deployments, "web"), synced, gitopstest.Entry("kubectl-edit", edited, imageField))},
		},
		"AnObjectForPruningIsNotReported": {
			reason:  "An object the Application lists for pruning is no longer in Git.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", true))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "web")},
		},
		"AnUntrackedObjectIsNotReported": {
			reason:  "Listing a kind returns every object of it; those without a tracking id are not Argo CD's.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", "", gitopstest.Entry("kubectl-edit", edited, imageField))},
		},
		"ASyncOperationIsNoDrift": {
			reason: "argocd app sync on an Application another syncs writes /operation, a control write.",
			apps:   []*unstructured.Unstructured{app("root", nil, resource(apps, "child", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(apps, "child", idOf("root", apps, "child"),
				gitopstest.Entry("argocd-controller", applied, []string{"f:spec", "f:source"}),
				gitopstest.Entry("argocd-server", edited, []string{"f:operation", "f:sync"}))},
			wantLists: []string{"argoproj.io/v1alpha1, Kind=Application"},
		},
		"EveryPageIsRead": {
			reason:  "Objects on later pages are judged too.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "a", false), resource(deployments, "b", false), resource(deployments, "c", false))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "a"), editedImage(deployments, "b"), editedImage(deployments, "c")},
			reader:  func(r *gitopstest.Reader) { r.MaxPage = 2 },
			want: []rule.Finding{
				drift(deployments, "a", "kubectl-edit", image), drift(deployments, "b", "kubectl-edit", image), drift(deployments, "c", "kubectl-edit", image),
			},
			wantLists: []string{"apps/v1, Kind=Deployment", "apps/v1, Kind=Deployment", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"AKindThatCannotBeListedIsSkipped": {
			reason:    "Deployments Steward may not list are skipped; StatefulSets are still audited.",
			apps:      []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false), resource(statefulSets, "db", false))},
			objects:   []*metav1.PartialObjectMetadata{editedImage(deployments, "web"), editedImage(statefulSets, "db")},
			reader:    func(r *gitopstest.Reader) { r.Forbidden = []schema.GroupKind{deployments.GroupKind()} },
			want:      []rule.Finding{drift(statefulSets, "db", "kubectl-edit", image)},
			wantLists: []string{"apps/v1, Kind=Deployment", "apps/v1, Kind=StatefulSet", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"GitAndAnAutoscalerSettingTheReplicasIsAFight": {
			reason:  "Argo CD owns the replicas of a Deployment an HPA scales: the fight is reported with both values.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"), synced)},
			reader: func(r *gitopstest.Reader) {
				r.Autoscalers = []autoscalingv2.HorizontalPodAutoscaler{autoscaler("apps", "web", "apps/v1", "Deployment", "web", 6), autoscaler("apps", "other", "apps/v1", "Deployment", "other", 2)}
				r.Replicas = map[string]int64{"apps/web": 2}
			},
			want: []rule.Finding{{Check: gitops.CheckAutoscalerFight, Result: rule.AuditWarn, Object: ref(deployments, "web"), Properties: map[string]string{
				"autoscaler": "apps/web", "gitReplicas": "2", "minReplicas": "1", "maxReplicas": "10", "desiredReplicas": "6"}}},
			wantLists: []string{"apps/v1, Kind=Deployment", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"AnAutoscalerOfReplicasGitDoesNotDeclareIsNoFight": {
			reason: "Argo CD's entry does not own the replicas: the HPA's are kept, and the autoscalers are not even listed.",
			apps:   []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"),
				gitopstest.Entry("argocd-controller", applied, imageField), gitopstest.Entry("kube-controller-manager", edited, replicasField))},
			reader: func(r *gitopstest.Reader) {
				r.Autoscalers = []autoscalingv2.HorizontalPodAutoscaler{autoscaler("apps", "web", "apps/v1", "Deployment", "web", 6)}
			},
			wantLists: []string{"apps/v1, Kind=Deployment"},
		},
		"AnAutoscalerOfAnotherKindIsNoFight": {
			reason:  "An HPA naming a StatefulSet web does not scale the Deployment web.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{tracked(deployments, "web", idOf("web", deployments, "web"), synced)},
			reader: func(r *gitopstest.Reader) {
				r.Autoscalers = []autoscalingv2.HorizontalPodAutoscaler{autoscaler("apps", "web", "apps/v1", "StatefulSet", "web", 6)}
				r.Replicas = map[string]int64{"apps/web": 2}
			},
		},
		"AutoscalersStewardMayNotListAreSkipped": {
			reason:  "Without list on HorizontalPodAutoscalers the fight check reports nothing, and the audit goes on.",
			apps:    []*unstructured.Unstructured{app("web", nil, resource(deployments, "web", false))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "web")},
			reader: func(r *gitopstest.Reader) {
				r.Forbidden = []schema.GroupKind{{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}}
			},
			want: []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
		},
		"KindsStewardIsNotGrantedAreNotListed": {
			reason:    "ConfigMaps are not among the kinds Steward may list: the audit does not ask for them.",
			apps:      []*unstructured.Unstructured{app("web", nil, resource(configMaps, "settings", false))},
			objects:   []*metav1.PartialObjectMetadata{editedImage(configMaps, "settings")},
			wantLists: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := gitopstest.ReaderWith(tc.reader, tc.objects...)
			got, err := New(tc.config, "").WithApplications(cacheOf(t, tc.apps...)).Audit(context.Background(), r)
			gitopstest.CheckAudit(t, tc.reason, r, got, err, tc.want, tc.wantLists)
		})
	}
}

func TestAuditMessage(t *testing.T) {
	r := gitopstest.NewReader(tracked(deployments, "web", idOf("web", deployments, "web"), synced, gitopstest.Entry("kubectl-edit", edited, imageField)))
	got, err := New(Config{}, "").WithApplications(cacheOf(t, app("web", nil, resource(deployments, "web", false)))).Audit(context.Background(), r)
	want := "argocdguard: Deployment apps/web is managed by Argo CD Application argocd/web (repo https://git.example.org/apps.git, path web, target main, revision 1a2b3c4); it is reverted at Argo CD's next self-heal (self-heal is on). " +
		"Changed since Argo CD last applied it, by kubectl-edit: /spec/template/spec/containers/[name=web]/image. Change it in the Git repository instead; " +
		"if the change is meant to stay, ignore the field in the Application's spec.ignoreDifferences and in argocdguard's ignoredFields."
	gitopstest.CheckMessages(t, got, err, want)
}

func TestAuditFailsWhenItCannotAnswer(t *testing.T) {
	apps := cacheOf(t, app("web", nil, resource(deployments, "web", false)))
	if _, err := New(Config{}, "").Audit(context.Background(), gitopstest.NewReader()); err == nil {
		t.Error("Audit without the Applications' cache succeeded")
	}
	r := gitopstest.NewReader()
	r.NotServed = []schema.GroupKind{deployments.GroupKind()}
	if _, err := New(Config{}, "").WithApplications(apps).Audit(context.Background(), r); err == nil {
		t.Error("Audit that could list no kind succeeded; it must fail so the previous findings stand")
	}
	if _, err := New(Config{}, "").WithApplications(gitopstest.Unsynced{}).Audit(context.Background(), gitopstest.NewReader()); err == nil {
		t.Error("Audit over an Applications' cache that cannot answer succeeded")
	}
}

func TestApplicationKeepsTheResourcesKinds(t *testing.T) {
	a := applicationOf(app("web", nil, resource(deployments, "web", false), resource(deployments, "api", false), resource(configMaps, "settings", true),
		map[string]any{"kind": "Service", "name": "no-version"}))
	want := []schema.GroupVersionKind{configMaps, deployments}
	if diff := cmp.Diff(want, a.kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}
