package apimigration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// fluxCRDs is where the real CRDs of every release in the table are
// vendored (see e2e/upstream/SOURCES.md).
const fluxCRDs = "../../e2e/upstream/flux"

// TestTableMatchesFluxCRDs holds the table to each release's real CRDs:
// for every release and kind, the CRD's group, kind and plural, the
// versions it serves, its storage version and the versions it marks
// deprecated are what the table says, and every vendored CRD is in it.
func TestTableMatchesFluxCRDs(t *testing.T) {
	for _, r := range releases {
		dir := filepath.Join(fluxCRDs, r.String())
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no CRDs vendored for Flux %s in %s: %v", r, dir, err)
		}
		seen := map[string]bool{}
		for _, file := range files {
			crd := readCRD(t, file)
			name := crd.Spec.Group + "/" + crd.Spec.Names.Kind
			seen[name] = true
			a := LookupKind(crd.Spec.Group, crd.Spec.Names.Kind)
			if a == nil {
				t.Errorf("Flux %s: %s: %s is not in the table", r, filepath.Base(file), name)
				continue
			}
			if a.Resource != crd.Spec.Names.Plural || crd.Spec.Scope != apiextensionsv1.NamespaceScoped ||
				filepath.Base(file) != crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml" {
				t.Errorf("Flux %s: %s: resource %q, scope %s; the table says %q, Namespaced", r, file, crd.Spec.Names.Plural, crd.Spec.Scope, a.Resource)
			}
			s := a.Releases[a.row(r)]
			if s.Release != r {
				t.Errorf("Flux %s: %s has no row for this release", r, name)
				continue
			}
			got := Serving{Release: r}
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				got.Served = append(got.Served, v.Name)
				if v.Storage {
					got.Storage = v.Name
				}
				if v.Deprecated {
					got.Deprecated = append(got.Deprecated, v.Name)
				}
			}
			if diff := cmp.Diff(sorted(s), sorted(got)); diff != "" {
				t.Errorf("Flux %s: %s: the table (-) differs from %s (+):\n%s", r, name, file, diff)
			}
		}
		for _, a := range apis {
			if !seen[a.Group+"/"+a.Kind] {
				t.Errorf("Flux %s: no CRD vendored for %s/%s", r, a.Group, a.Kind)
			}
		}
	}
}

// TestTableHasARowPerRelease: every kind has one row per release, in the
// order of releases, and each row prefers its storage version.
func TestTableHasARowPerRelease(t *testing.T) {
	for _, a := range apis {
		var got []Release
		for _, s := range a.Releases {
			got = append(got, s.Release)
			if p := a.Preferred(s.Release); p != s.Storage {
				t.Errorf("%s at Flux %s: preferred version %s is not the storage version %s", a.Kind, s.Release, p, s.Storage)
			}
		}
		if diff := cmp.Diff(releases, got); diff != "" {
			t.Errorf("%s: releases (-want +got):\n%s", a.Kind, diff)
		}
	}
}

func readCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if crd.Kind != "CustomResourceDefinition" || !strings.HasSuffix(crd.Spec.Group, ".toolkit.fluxcd.io") {
		t.Fatalf("%s: not a Flux CRD: %s %s", file, crd.Kind, crd.Spec.Group)
	}
	return &crd
}

// sorted is s with its version lists sorted, so CRD order does not matter.
func sorted(s Serving) Serving {
	s.Served, s.Deprecated = slices.Sorted(slices.Values(s.Served)), slices.Sorted(slices.Values(s.Deprecated))
	if len(s.Deprecated) == 0 {
		s.Deprecated = nil
	}
	return s
}
