package manifests

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the committed manifests from the code")

// TestCommittedManifestsMatchRender fails when the YAML under manifests/
// differs from what the code renders: run `make generate` and commit.
func TestCommittedManifestsMatchRender(t *testing.T) {
	files, err := Render(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := Write(".", files); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s is rendered but not committed (run make generate): %v", path, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s differs from the rendered manifest (run make generate) (-rendered +committed):\n%s", path, diff)
		}
	}
	for _, path := range committedYAML(t) {
		if _, ok := files[path]; !ok {
			t.Errorf("%s is committed but no longer rendered; delete it", path)
		}
	}
}

func committedYAML(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, dir := range []string{"base", "overlays", "monitoring", "policyreport-crds"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				paths = append(paths, filepath.ToSlash(path))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(paths)
	return paths
}

// build renders an overlay with kubectl's kustomize, as an installer would.
func build(t *testing.T, overlay string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", filepath.Join("overlays", overlay)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize overlays/%s: %v\n%s", overlay, err, out)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("overlays/%s: %v", overlay, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestOverlaysRenderWithKustomize(t *testing.T) {
	common := []string{"Namespace/" + DefaultNamespace, "ServiceAccount/" + Name, "ClusterRole/" + Name, "ClusterRoleBinding/" + Name,
		"ConfigMap/" + Name + "-config", "Deployment/" + Name, "Service/" + Name, "PodDisruptionBudget/" + Name,
		"ValidatingWebhookConfiguration/" + Name, "MutatingWebhookConfiguration/" + Name}
	tests := map[string]struct {
		reason string
		want   []string
	}{
		"cert-manager": {
			reason: "cert-manager issues the serving certificate from a CA chain",
			want:   append(common, "Issuer/steward-selfsigned", "Certificate/steward-ca", "Issuer/steward-ca", "Certificate/steward-serving-cert"),
		},
		"self-managed-certs": {
			reason: "Steward fills an empty Secret it may only get and update by name",
			want:   append(common, "Secret/"+SecretName, "Role/steward-certs", "ClusterRole/steward-certs"),
		},
	}
	for overlay, tc := range tests {
		t.Run(overlay, func(t *testing.T) {
			objs := build(t, overlay)
			for _, w := range tc.want {
				kind, name, _ := strings.Cut(w, "/")
				if find(objs, kind, name) == nil {
					t.Errorf("%s: overlays/%s renders no %s", tc.reason, overlay, w)
				}
			}
		})
	}
}

// TestEverythingFollowsTheNamespace renders for another namespace and finds
// the default nowhere: objects, RBAC subjects, the certificate's DNS names,
// cert-manager's CA injection and the webhooks' self-exclusion all follow.
func TestEverythingFollowsTheNamespace(t *testing.T) {
	files, err := Render(Options{Namespace: "steward-ops"})
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range files {
		if strings.Contains(string(data), DefaultNamespace) {
			t.Errorf("%s rendered for steward-ops still names %s", path, DefaultNamespace)
		}
	}
	for _, want := range []string{"- steward-ops", "steward.steward-ops.svc", "steward-ops/steward-serving"} {
		found := false
		for _, data := range files {
			found = found || strings.Contains(string(data), want)
		}
		if !found {
			t.Errorf("no rendered file contains %q", want)
		}
	}
}
