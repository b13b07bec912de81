package fluxguard

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
)

var (
	ociRepositoriesGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	helmChartsGVR      = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
)

// ociHelmRelease is podinfo/podinfo-oci as helm-controller 1.7 (Flux
// 2.10) leaves it: spec.chart generates an OCIRepository, which
// status.helmChart names as <kind>/<namespace>/<name>.
var ociHelmRelease = obj(podinfoHelmRelease, set("podinfo-oci", "metadata", "name"),
	set(map[string]any{"kind": "OCIRepository", "spec": map[string]any{"url": "oci://ghcr.io/stefanprodan/charts/podinfo", "interval": "12h"}}, "spec", "chart"),
	set("OCIRepository/podinfo/podinfo-oci", "status", "helmChart"))

// chartHelmRelease generates a HelmChart, which status.helmChart names as
// <namespace>/<name>, as every helm-controller release has.
var chartHelmRelease = obj(podinfoHelmRelease, set("podinfo-chart", "metadata", "name"),
	set("flux-system/podinfo-podinfo-chart", "status", "helmChart"))

// generatedSource is the chart source helm-controller applied for the
// HelmRelease hr (namespace/name), labelled as it labels it.
func generatedSource(kind, namespace, name, hr string, edits ...func(map[string]any)) map[string]any {
	return configMap(namespace, name, "x/y", append([]func(map[string]any){
		set("source.toolkit.fluxcd.io/v1", "apiVersion"), set(kind, "kind"), del("data"),
		set(map[string]any{"interval": "12h", "url": "oci://ghcr.io/stefanprodan/charts/podinfo"}, "spec"),
		helmLabelled(hr),
		// helm-controller server-side applies the source it generates.
		set([]any{map[string]any{"manager": "helm-controller", "operation": "Apply", "apiVersion": "source.toolkit.fluxcd.io/v1", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{"f:" + LabelHelmReleaseName: map[string]any{}, "f:" + LabelHelmReleaseNamespace: map[string]any{}}},
				"f:spec":     map[string]any{"f:interval": map[string]any{}, "f:url": map[string]any{}},
			}}}, "metadata", "managedFields"),
	}, edits...)...)
}

// TestAGeneratedChartSourceIsItsHelmReleases: the OCIRepository (Flux
// 2.10) or HelmChart a HelmRelease's spec.chart generates is that
// HelmRelease's, recorded in its status.helmChart rather than its
// inventory; helm-controller applies it again at every reconcile, so a
// person's change is refused whatever drift detection says.
func TestAGeneratedChartSourceIsItsHelmReleases(t *testing.T) {
	r := New(Config{}, breakGlass).WithOwners(cached(ociHelmRelease, chartHelmRelease))
	const ociOwner = "Flux HelmRelease podinfo/podinfo-oci (chart oci://ghcr.io/stefanprodan/charts/podinfo, revision 6.7.1)"
	cases := map[string]struct {
		reason string
		req    admission.Request
		want   admission.Response
	}{
		"OCIRepositoryEditIsRefused": {
			reason: "status.helmChart OCIRepository/podinfo/podinfo-oci names it",
			req: admissiontest.Update(ociRepositoriesGVR, "OCIRepository",
				generatedSource("OCIRepository", "podinfo", "podinfo-oci", "podinfo/podinfo-oci"),
				generatedSource("OCIRepository", "podinfo", "podinfo-oci", "podinfo/podinfo-oci", set("1m", "spec", "interval"))).Build(),
			want: admission.Denied("fluxguard: OCIRepository podinfo/podinfo-oci is managed by " + ociOwner + "; " +
				"helm-controller applies it again from the HelmRelease's spec.chart at the next reconcile (interval 30m). Changed: /spec/interval. " +
				"Change it in the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo-oci (flux suspend)" + emergency),
		},
		"HelmChartDeleteIsRefused": {
			reason: "status.helmChart flux-system/podinfo-podinfo-chart names a HelmChart",
			req:    admissiontest.Delete(helmChartsGVR, "HelmChart", generatedSource("HelmChart", "flux-system", "podinfo-podinfo-chart", "podinfo/podinfo-chart")).Build(),
			want: admission.Denied("fluxguard: HelmChart flux-system/podinfo-podinfo-chart is managed by Flux HelmRelease podinfo/podinfo-chart (chart podinfo from HelmRepository flux-system/podinfo, revision 6.7.1); " +
				"helm-controller applies it again from the HelmRelease's spec.chart at the next reconcile (interval 30m). Deleting it is refused: Flux would re-create it. " +
				"Remove it from the Git repository instead; to pause Flux, suspend HelmRelease podinfo/podinfo-chart (flux suspend)" + emergency),
		},
		"AnotherOCIRepositoryIsNotIts": {
			reason: "labels naming the HelmRelease on an OCIRepository its status.helmChart does not name prove nothing",
			req:    admissiontest.Delete(ociRepositoriesGVR, "OCIRepository", generatedSource("OCIRepository", "podinfo", "other", "podinfo/podinfo-oci")).Build(),
			want:   admission.Allowed("Flux HelmRelease podinfo/podinfo-oci does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"AHelmChartOfTheOCIRepositorysNameIsNotIts": {
			reason: "the kind in status.helmChart counts: a HelmChart podinfo/podinfo-oci is not the generated OCIRepository",
			req:    admissiontest.Delete(helmChartsGVR, "HelmChart", generatedSource("HelmChart", "podinfo", "podinfo-oci", "podinfo/podinfo-oci")).Build(),
			want:   admission.Allowed("Flux HelmRelease podinfo/podinfo-oci does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.Handle(context.Background(), rule.NewRequest(tc.req))); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParseHelmChart(t *testing.T) {
	cases := map[string]generatedChart{
		"flux-system/podinfo-podinfo":     {"HelmChart", "flux-system", "podinfo-podinfo"},
		"OCIRepository/podinfo/podinfo":   {"OCIRepository", "podinfo", "podinfo"},
		"HelmChart/flux-system/podinfo":   {"HelmChart", "flux-system", "podinfo"},
		"ExternalArtifact/podinfo/chart":  {},
		"":                                {},
		"/podinfo":                        {},
		"OCIRepository//podinfo":          {},
		"a/b/c/d":                         {},
		"OCIRepository/podinfo/podinfo/x": {},
	}
	for in, want := range cases {
		if got := parseHelmChart(in); got != want {
			t.Errorf("parseHelmChart(%q) = %+v, want %+v", in, got, want)
		}
	}
}
