package fluxguard

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// applied is when Flux last applied the tests' objects; edited is an
// hour later.
var applied, edited = gitopstest.Applied, gitopstest.Edited

var (
	deployments, statefulSets, configMaps = gitopstest.Deployments, gitopstest.StatefulSets, gitopstest.ConfigMaps
	kustomizationK                        = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	imageField, replicasField             = gitopstest.ImageField, gitopstest.ReplicasField
)

// ownerCache is a gitops.OwnerCache over owners built as the informers'
// transform builds them.
type ownerCache map[schema.GroupResource][]any

func (c ownerCache) Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error) {
	for _, obj := range c[gr] {
		if o := obj.(*owner); o.Namespace == namespace && o.Name == name {
			return o, true, nil
		}
	}
	return nil, false, nil
}

func (c ownerCache) List(gr schema.GroupResource) ([]any, error) { return c[gr], nil }

func cacheOf(t testing.TB, owners ...*unstructured.Unstructured) ownerCache {
	c := ownerCache{}
	for _, u := range owners {
		o, err := keepOwner(u)
		if err != nil {
			t.Fatal(err)
		}
		gr := kustomizations
		if u.GetKind() == kindHelmRelease {
			gr = helmReleases
		}
		c[gr] = append(c[gr], o)
	}
	return c
}

// entry is an inventory entry for an object of gvk.
func entry(gvk schema.GroupVersionKind, namespace, name string) any {
	return map[string]any{"id": gitops.InventoryID(namespace, name, gvk.Group, gvk.Kind), "v": gvk.Version}
}

// kustomization is flux-system/<name>, applying entries.
func kustomization(name string, spec map[string]any, entries ...any) *unstructured.Unstructured {
	s := map[string]any{
		"interval":  "10m",
		"path":      "./" + name,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
	}
	for k, v := range spec {
		s[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": kindKustomization,
		"metadata": map[string]any{"namespace": "flux-system", "name": name},
		"spec":     s,
		"status": map[string]any{
			"lastAppliedRevision": "main@sha1:1a2b3c4d5e6f",
			"inventory":           map[string]any{"entries": entries},
		},
	}}
}

// helmRelease is flux-system/<name>, installing entries.
func helmRelease(name string, entries ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": kindHelmRelease,
		"metadata": map[string]any{"namespace": "flux-system", "name": name},
		"spec": map[string]any{
			"interval":       "5m",
			"driftDetection": map[string]any{"mode": "enabled"},
			"chart":          map[string]any{"spec": map[string]any{"chart": name, "sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}},
		},
		"status": map[string]any{
			"history":   []any{map[string]any{"chartVersion": "1.2.3"}},
			"inventory": map[string]any{"entries": entries},
		},
	}}
}

// applyLabels are the labels kustomize-controller sets for flux-system/<owner>.
func applyLabels(owner string) map[string]string {
	return map[string]string{LabelKustomizationName: owner, LabelKustomizationNamespace: "flux-system"}
}

// listed is an object of gvk in namespace apps with the given labels and
// managedFields.
func listed(gvk schema.GroupVersionKind, name string, labels, annotations map[string]string, managedFields ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
	return gitopstest.Object(gvk, "apps", name, labels, annotations, managedFields...)
}

// appliedBy is the controller's apply of the whole manifest.
func appliedBy(manager string) metav1.ManagedFieldsEntry {
	return gitopstest.Entry(manager, applied, imageField, replicasField, []string{"f:metadata", "f:labels", "f:" + LabelKustomizationName})
}

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
		return listed(gvk, name, applyLabels("apps"), nil, appliedBy("kustomize-controller"), gitopstest.Entry("kubectl-edit", edited, imageField))
	}
	apps := func(spec map[string]any, entries ...any) *unstructured.Unstructured {
		return kustomization("apps", spec, entries...)
	}
	cases := map[string]struct {
		reason    string
		config    Config
		owners    []*unstructured.Unstructured
		objects   []*metav1.PartialObjectMetadata
		reader    func(*gitopstest.Reader)
		want      []rule.Finding
		wantLists []string
	}{
		"AnEditAfterFluxAppliedIsDrift": {
			reason:    "kubectl edit of the image after kustomize-controller applied the Deployment is reported, with the manager and the field.",
			owners:    []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects:   []*metav1.PartialObjectMetadata{editedImage(deployments, "web")},
			want:      []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
			wantLists: []string{"apps/v1, Kind=Deployment kustomize.toolkit.fluxcd.io/name", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"OnlyTheControllerWroteIsNoDrift": {
			reason: "kustomize-controller's apply, and the deployment controller's revision annotation and status after it, are no drift.",
			owners: []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web", applyLabels("apps"), nil, appliedBy("kustomize-controller"),
				gitopstest.Entry("kube-controller-manager", edited, []string{"f:metadata", "f:annotations", "f:deployment.kubernetes.io/revision"}, []string{"f:status", "f:replicas"}))},
		},
		"AnEditFluxAppliedOverIsNoDrift": {
			reason:  "An edit before kustomize-controller's last apply was reverted.",
			owners:  []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web", applyLabels("apps"), nil, gitopstest.Entry("kubectl-edit", applied.Add(-time.Hour), imageField), appliedBy("kustomize-controller"))},
		},
		"IgnoredFieldsAreNoDrift": {
			reason: "With /spec/replicas configured as ignored for Deployments (an autoscaler's), a scale is no drift.",
			config: Config{Settings: gitops.Settings{IgnoredFields: []gitops.IgnoredFields{{Group: "apps", Kind: "Deployment", Paths: []string{"/spec/replicas"}}}}},
			owners: []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web", applyLabels("apps"), nil, appliedBy("kustomize-controller"),
				gitopstest.Entry("kubectl", edited, replicasField))},
		},
		"TheKustomizationsIgnoreRulesAreNoDrift": {
			reason: "A path the Kustomization's spec.ignore names is no drift; the image changed with it is.",
			owners: []*unstructured.Unstructured{apps(map[string]any{"ignore": []any{map[string]any{
				"paths": []any{"/spec/replicas"}, "target": map[string]any{"kind": "Deployment"}}}}, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web", applyLabels("apps"), nil, appliedBy("kustomize-controller"),
				gitopstest.Entry("kubectl-edit", edited, replicasField, imageField))},
			want: []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
		},
		"AnObjectNotInTheInventoryIsNotReported": {
			reason:  "Labels copied onto an object the Kustomization does not list make it no Flux object.",
			owners:  []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "web"), editedImage(deployments, "copy")},
			want:    []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
		},
		"AnObjectOfAMissingOwnerIsNotReported": {
			reason:  "Labels naming a Kustomization that does not exist make it no Flux object.",
			owners:  []*unstructured.Unstructured{kustomization("other", nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{editedImage(deployments, "web")},
		},
		"AnOptedOutObjectIsNotReported": {
			reason: "kustomize.toolkit.fluxcd.io/reconcile: disabled tells Flux to leave the object alone.",
			owners: []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web", applyLabels("apps"), map[string]string{MarkerReconcile: "disabled"},
				appliedBy("kustomize-controller"), gitopstest.Entry("kubectl-edit", edited, imageField))},
		},
		"ControlWritesAreNoDrift": {
			reason: "flux suspend and flux reconcile on a Kustomization another applies change nothing Flux deploys.",
			owners: []*unstructured.Unstructured{kustomization("clusters", nil, entry(kustomizationK, "apps", "tenant"))},
			objects: []*metav1.PartialObjectMetadata{gitopstest.Object(kustomizationK, "apps", "tenant", applyLabels("clusters"), nil,
				gitopstest.Entry("kustomize-controller", applied, []string{"f:spec", "f:path"}),
				gitopstest.Entry("flux", edited, []string{"f:spec", "f:suspend"}, []string{"f:metadata", "f:annotations", "f:reconcile.fluxcd.io/requestedAt"}))},
			wantLists: []string{"kustomize.toolkit.fluxcd.io/v1, Kind=Kustomization kustomize.toolkit.fluxcd.io/name"},
		},
		"AHelmReleasesObjectIsJudgedByHelmController": {
			reason: "helm-controller's install is Flux's write; an edit after it is drift.",
			owners: []*unstructured.Unstructured{helmRelease("web", entry(deployments, "apps", "web"))},
			objects: []*metav1.PartialObjectMetadata{listed(deployments, "web",
				map[string]string{LabelHelmReleaseName: "web", LabelHelmReleaseNamespace: "flux-system"}, nil,
				gitopstest.Entry("helm-controller", applied, imageField), gitopstest.Entry("kubectl-edit", edited, imageField))},
			want:      []rule.Finding{drift(deployments, "web", "kubectl-edit", image)},
			wantLists: []string{"apps/v1, Kind=Deployment helm.toolkit.fluxcd.io/name"},
		},
		"EveryPageIsRead": {
			reason: "Objects on later pages are judged too.",
			owners: []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "a"), entry(deployments, "apps", "b"), entry(deployments, "apps", "c"))},
			objects: []*metav1.PartialObjectMetadata{
				editedImage(deployments, "a"), editedImage(deployments, "b"), editedImage(deployments, "c"),
			},
			reader: func(r *gitopstest.Reader) { r.MaxPage = 2 },
			want: []rule.Finding{
				drift(deployments, "a", "kubectl-edit", image), drift(deployments, "b", "kubectl-edit", image), drift(deployments, "c", "kubectl-edit", image),
			},
			wantLists: []string{"apps/v1, Kind=Deployment kustomize.toolkit.fluxcd.io/name", "apps/v1, Kind=Deployment kustomize.toolkit.fluxcd.io/name", "autoscaling/v2, Kind=HorizontalPodAutoscaler"},
		},
		"AKindThatCannotBeListedIsSkipped": {
			reason: "Deployments Steward may not list are skipped; StatefulSets are still audited.",
			owners: []*unstructured.Unstructured{apps(nil, entry(deployments, "apps", "web"), entry(statefulSets, "apps", "db"))},
			objects: []*metav1.PartialObjectMetadata{
				editedImage(deployments, "web"), editedImage(statefulSets, "db"),
			},
			reader: func(r *gitopstest.Reader) { r.Forbidden = []schema.GroupKind{deployments.GroupKind()} },
			want:   []rule.Finding{drift(statefulSets, "db", "kubectl-edit", image)},
			wantLists: []string{
				"apps/v1, Kind=Deployment kustomize.toolkit.fluxcd.io/name",
				"apps/v1, Kind=StatefulSet kustomize.toolkit.fluxcd.io/name",
				"autoscaling/v2, Kind=HorizontalPodAutoscaler",
			},
		},
		"KindsStewardIsNotGrantedAreNotListed": {
			reason:    "ConfigMaps are not among the kinds Steward may list: the audit does not ask for them.",
			owners:    []*unstructured.Unstructured{apps(nil, entry(configMaps, "apps", "settings"))},
			objects:   []*metav1.PartialObjectMetadata{editedImage(configMaps, "settings")},
			wantLists: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := gitopstest.ReaderWith(tc.reader, tc.objects...)
			got, err := New(tc.config, "").WithOwners(cacheOf(t, tc.owners...)).Audit(context.Background(), r)
			gitopstest.CheckAudit(t, tc.reason, r, got, err, tc.want, tc.wantLists)
		})
	}
}

func TestAuditMessage(t *testing.T) {
	owners := cacheOf(t, kustomization("apps", nil, entry(deployments, "apps", "web")), helmRelease("cache", entry(deployments, "apps", "cache")))
	r := gitopstest.NewReader(
		listed(deployments, "web", applyLabels("apps"), nil, appliedBy("kustomize-controller"), gitopstest.Entry("kubectl-edit", edited, imageField)),
		listed(deployments, "cache", map[string]string{LabelHelmReleaseName: "cache", LabelHelmReleaseNamespace: "flux-system"}, nil,
			gitopstest.Entry("helm-controller", applied, replicasField), gitopstest.Entry("kubectl", edited, replicasField)),
	)
	got, err := New(Config{}, "").WithOwners(owners).Audit(context.Background(), r)
	gitopstest.CheckMessages(t, got, err,
		"fluxguard: Deployment apps/cache is managed by Flux HelmRelease flux-system/cache (chart cache from HelmRepository flux-system/charts, revision 1.2.3); it is reverted at the next reconcile (interval 5m). "+
			"Changed since Flux last applied it, by kubectl: /spec/replicas. Change it in the Git repository instead; "+
			"if the change is meant to stay, ignore the field in the HelmRelease's spec.driftDetection.ignore and in fluxguard's ignoredFields.",
		"fluxguard: Deployment apps/web is managed by Flux Kustomization flux-system/apps (GitRepository flux-system/flux-system, path ./apps, revision main@sha1:1a2b3c4); it is reverted at the next reconcile (interval 10m). "+
			"Changed since Flux last applied it, by kubectl-edit: /spec/template/spec/containers/[name=web]/image. Change it in the Git repository instead; "+
			"if the change is meant to stay, ignore the field in the Kustomization's spec.ignore and in fluxguard's ignoredFields.",
	)
}

func TestAuditFailsWhenItCannotAnswer(t *testing.T) {
	owners := cacheOf(t, kustomization("apps", nil, entry(deployments, "apps", "web")))
	if _, err := New(Config{}, "").Audit(context.Background(), gitopstest.NewReader()); err == nil {
		t.Error("Audit without the owners' cache succeeded")
	}
	r := gitopstest.NewReader()
	r.Forbidden = []schema.GroupKind{deployments.GroupKind()}
	if _, err := New(Config{}, "").WithOwners(owners).Audit(context.Background(), r); err == nil {
		t.Error("Audit that could list no kind succeeded; it must fail so the previous findings stand")
	}
	if _, err := New(Config{}, "").WithOwners(gitopstest.Unsynced{}).Audit(context.Background(), gitopstest.NewReader()); err == nil {
		t.Error("Audit over an owners' cache that cannot answer succeeded")
	}
}

func TestOwnerKeepsTheInventorysKinds(t *testing.T) {
	o := ownerOf(kustomization("apps", nil, entry(deployments, "apps", "web"), entry(deployments, "apps", "api"),
		entry(configMaps, "apps", "settings"), map[string]any{"id": "apps_x_apps_Deployment"}))
	want := []schema.GroupVersionKind{configMaps, deployments}
	if diff := cmp.Diff(want, o.kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}
