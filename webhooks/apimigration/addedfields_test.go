package apimigration

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAddedFieldsMatchFluxCRDs holds addedFields to the vendored CRDs:
// each field is in its release's CRD and every later one, and in no
// earlier release's, so a CRD with it is of that release or later.
func TestAddedFieldsMatchFluxCRDs(t *testing.T) {
	for _, f := range addedFields {
		a := LookupKind(f.group, f.kind)
		if a == nil {
			t.Errorf("%s/%s is not in the table", f.group, f.kind)
			continue
		}
		for _, r := range releases {
			file := filepath.Join(fluxCRDs, r.String(), a.Group+"_"+a.Resource+".yaml")
			s := shapeOf(a, readCRDObject(t, file))
			if got, want := s.Fields[f.key()], r.AtLeast(f.since); got != want {
				t.Errorf("%s %s %s at Flux %s: field present %v, want %v (added in %s)", f.kind, f.version, f.path, r, got, want, f.since)
			}
		}
	}
}

// TestClusterTargetFromSomeOfAReleasesCRDs installs, unlabelled, only some
// of a release's CRDs, as a cluster with part of Flux has them: the CRDs'
// deprecation marks and schemas tell releases apart that serve the same
// versions, and where nothing tells them apart the range is named.
func TestClusterTargetFromSomeOfAReleasesCRDs(t *testing.T) {
	cases := map[string]struct {
		reason  string
		release string
		kinds   []string
		want    string
	}{
		"Kustomization28":  {"2.8's Kustomization lacks spec.ignore, which 2.9 added", "2.8", []string{"Kustomization"}, "2.8"},
		"Kustomization29":  {"2.9 and 2.10 serve the same Kustomization schema", "2.9", []string{"Kustomization"}, "2.9 or 2.10"},
		"Kustomization210": {"the same CRD as 2.9's", "2.10", []string{"Kustomization"}, "2.9 or 2.10"},
		"KustomizationAndHelmRelease29": {"HelmRelease's spec.chart.kind came in 2.10", "2.9",
			[]string{"Kustomization", "HelmRelease"}, "2.9"},
		"HelmRelease210":   {"HelmRelease's spec.chart.kind came in 2.10", "2.10", []string{"HelmRelease"}, "2.10"},
		"GitRepository210": {"GitRepository's status.sourceVerificationFingerprint came in 2.10", "2.10", []string{"GitRepository"}, "2.10"},
		"HelmRepository29": {"HelmRepository did not change from 2.8 to 2.10: the range is named", "2.9", []string{"HelmRepository"}, "2.8 to 2.10"},
		"Alert210":         {"Alert v1 is served from 2.10", "2.10", []string{"Alert", "Provider"}, "2.10"},
		"ImageReflector29": {"image-reflector-controller's CRDs did not change from 2.9 to 2.10", "2.9", []string{"ImageRepository", "ImagePolicy"}, "2.9 or 2.10"},
		"Receiver28":       {"Receiver v1beta2 is still served in 2.8", "2.8", []string{"Receiver"}, "2.7 or 2.8"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ClusterTarget(clusterFrom(t, tc.release, "", tc.kinds...))
			if diff := cmp.Diff(tc.want, got.Name()); diff != "" || got.Source != SourceServedVersions {
				t.Errorf("%s (source %s)\n-want +got:\n%s", tc.reason, got.Source, diff)
			}
		})
	}
}

// TestEachKindAloneNamesItsRelease: whatever single kind of a release is
// installed, unlabelled, the target names a range holding that release and
// decides against a release no newer (so nothing it serves is refused);
// the CRDs' marks and schemas never narrow less than the served versions.
func TestEachKindAloneNamesItsRelease(t *testing.T) {
	for _, r := range releases {
		for _, a := range apis {
			s, shapes := clusterFrom(t, r.String(), "", a.Kind)
			withShapes, servedOnly := ClusterTarget(s, shapes), ClusterTarget(s, nil)
			for _, got := range []Target{withShapes, servedOnly} {
				upto := got.Upto
				if upto == (Release{}) {
					upto = got.Release
				}
				if !r.AtLeast(got.Release) || !upto.AtLeast(r) {
					t.Errorf("Flux %s, %s alone: target %v does not hold %s", r, a.Kind, got, r)
				}
			}
			if width(withShapes) > width(servedOnly) {
				t.Errorf("Flux %s, %s alone: the CRD widened the range: %v, from the served versions %v", r, a.Kind, withShapes, servedOnly)
			}
		}
	}
}

// width is the number of releases a target may be.
func width(t Target) int {
	if t.Upto == (Release{}) {
		return 1
	}
	n := 0
	for _, r := range releases {
		if r.AtLeast(t.Release) && t.Upto.AtLeast(r) {
			n++
		}
	}
	return n
}

// TestContradictoryCRDsKeepTheServedVersionsChoice: CRDs that fit no
// release of those their served versions match (a hand-edited schema)
// leave the served versions' choice.
func TestContradictoryCRDsKeepTheServedVersionsChoice(t *testing.T) {
	s, shapes := clusterFrom(t, "2.8", "", "Kustomization", "HelmRelease")
	// 2.8's Kustomization (no spec.ignore) next to a HelmRelease claiming
	// 2.10's spec.chart.kind.
	hr := shapes[schema.GroupResource{Group: HelmGroup, Resource: "helmreleases"}]
	hr.Fields["v2:spec.chart.kind"], hr.Fields["v2:spec.postRenderStrategy"] = true, true
	if got, want := ClusterTarget(s, shapes), ranged("2.8", "2.10", SourceServedVersions); got != want {
		t.Errorf("target %v, want %v", got, want)
	}
}

func TestTargetName(t *testing.T) {
	cases := map[string]struct {
		target Target
		want   string
	}{
		"Exact":         {target("2.9", SourceClusterLabel), "2.9 (cluster-label)"},
		"UptoSame":      {Target{Release: flux29, Upto: flux29, Source: SourceServedVersions}, "2.9 (served-versions)"},
		"TwoReleases":   {ranged("2.8", "2.9", SourceServedVersions), "2.8 or 2.9 (served-versions)"},
		"ThreeReleases": {ranged("2.8", "2.10", SourceServedVersions), "2.8 to 2.10 (served-versions)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.target.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzShapeOf: a CRD of any shape is read without a panic, and only the
// kind's added fields are ever reported.
func FuzzShapeOf(f *testing.F) {
	f.Add(`{"metadata":{"name":"x"},"spec":{"versions":[{"name":"v2","served":true,"deprecated":true,"schema":{"openAPIV3Schema":{"properties":{"spec":{"properties":{"chart":{"properties":{"kind":{}}}}}}}}}]},"status":{"storedVersions":["v2",1]}}`)
	f.Add(`{"spec":{"versions":[null,1,{"name":3},{"name":"v2","served":"yes"}]}}`)
	f.Add(`{"spec":{"versions":[{"name":"v2","served":true,"schema":{"openAPIV3Schema":{"properties":{"spec":[]}}}}]}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		s := shapeOf(helmRelease, obj)
		for k := range s.Fields {
			if k != "v2:spec.postRenderStrategy" && k != "v2:spec.chart.kind" {
				t.Errorf("field %q is not one of HelmRelease's added fields", k)
			}
		}
	})
}
