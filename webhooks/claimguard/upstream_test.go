package claimguard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// upstream is where Crossplane's and provider-sql's real CRDs are vendored
// (see e2e/upstream/SOURCES.md).
const upstream = "../../e2e/upstream"

func readUpstreamCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// schemaHas reports whether a field path exists in an OpenAPI schema;
// "[]" steps into array items.
func schemaHas(s *apiextensionsv1.JSONSchemaProps, path ...string) bool {
	for _, p := range path {
		if s == nil {
			return false
		}
		if p == "[]" {
			if s.Items == nil {
				return false
			}
			s = s.Items.Schema
			continue
		}
		next, ok := s.Properties[p]
		if !ok {
			return false
		}
		s = &next
	}
	return s != nil
}

// TestXRDFieldsAreInCrossplanesCRDs holds parseXRD to Crossplane's real XRD
// CRDs of a v1 and a v2 release: every version claimguard may read is
// served with every field it reads, and v2 is read where it is served.
func TestXRDFieldsAreInCrossplanesCRDs(t *testing.T) {
	read := [][]string{
		{"spec", "group"}, {"spec", "names", "kind"}, {"spec", "names", "plural"},
		{"spec", "claimNames", "kind"}, {"spec", "claimNames", "plural"},
		{"spec", "defaultCompositeDeletePolicy"}, {"spec", "scope"},
		{"spec", "versions", "[]", "name"}, {"spec", "versions", "[]", "served"}, {"spec", "versions", "[]", "referenceable"},
	}
	for release, want := range map[string][]string{"1.20": {"v1"}, "2.3": {"v1", "v2"}} {
		t.Run(release, func(t *testing.T) {
			crd := readUpstreamCRD(t, filepath.Join(upstream, "crossplane", release, "apiextensions.crossplane.io_compositeresourcedefinitions.yaml"))
			if gr := (schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}); gr != xrdGroupResource {
				t.Fatalf("the XRD CRD serves %s, claimguard watches %s", gr, xrdGroupResource)
			}
			var served []string
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				served = append(served, v.Name)
				if !slices.Contains(xrdVersions, v.Name) {
					t.Errorf("Crossplane %s serves XRDs as %s, which claimguard does not read", release, v.Name)
				}
				for _, path := range read {
					if path[1] == "scope" && release == "1.20" {
						continue // Crossplane 1 has no scope: every XR is cluster-scoped.
					}
					if !schemaHas(v.Schema.OpenAPIV3Schema, path...) {
						t.Errorf("Crossplane %s, XRD %s: the schema has no %v", release, v.Name, path)
					}
				}
			}
			if !slices.Equal(served, want) {
				t.Errorf("Crossplane %s serves XRDs as %v, want %v", release, served, want)
			}
		})
	}
}

// TestProviderSQLKindsPairAcrossGroups holds the legacy/.m. pairing to
// provider-sql's real CRDs: every namespaced kind of its .m. group pairs
// with the cluster-scoped kind of the same name in its legacy group, and
// both are in the managed category claimguard discovers MRs by.
func TestProviderSQLKindsPairAcrossGroups(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(upstream, "provider-sql", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no provider-sql CRDs vendored: %v", err)
	}
	legacy := map[schema.GroupKind]bool{}
	var namespaced []schema.GroupKind
	for _, f := range files {
		crd := readUpstreamCRD(t, f)
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		if !slices.Contains(crd.Spec.Names.Categories, "managed") {
			t.Errorf("%s is not in the managed category", gk)
		}
		switch crd.Spec.Scope {
		case apiextensionsv1.ClusterScoped:
			legacy[gk] = true
			if got := providerKind(gk, false); got != gk {
				t.Errorf("providerKind(%s, cluster-scoped) = %s, want itself", gk, got)
			}
		case apiextensionsv1.NamespaceScoped:
			namespaced = append(namespaced, gk)
		}
	}
	if len(namespaced) == 0 || len(legacy) == 0 {
		t.Fatalf("want kinds of both groups, got legacy %v and namespaced %v", legacy, namespaced)
	}
	for _, gk := range namespaced {
		if pk := providerKind(gk, true); !legacy[pk] {
			t.Errorf("the namespaced %s pairs with %s, which provider-sql does not serve cluster-scoped", gk, pk)
		}
	}
}
