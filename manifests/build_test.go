package manifests

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// ids lists objects by kind, namespace and name, in their order.
func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// TestBuildIsWhatKustomizeBuilds proves `steward manifests --dir -` prints
// what `kubectl kustomize` of the overlay it names prints, the same objects
// in the same order, for the default install and for another namespace
// and configuration.
func TestBuildIsWhatKustomizeBuilds(t *testing.T) {
	cfg, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nexemptUsers: [ci-bot]\nrules:\n  installplanguard:\n    mode: \"off\"\n"), "test", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"defaults":                            {},
		"another namespace and configuration": {Namespace: "platform-guards", Image: "registry.example.com/steward:v9", Config: &cfg},
	} {
		for _, overlay := range Overlays() {
			t.Run(name+"/"+overlay, func(t *testing.T) {
				want := kustomize(t, filepath.Join(renderTo(t, o), "overlays", overlay))
				docs, err := Build(o, overlay)
				if err != nil {
					t.Fatal(err)
				}
				stream := Stream(docs)
				got := parseObjects(t, stream)
				if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
					t.Errorf("the objects or their order differ from kubectl kustomize's (-kustomize +build):\n%s", diff)
				}
				if diff := byKeyDiff(t, want, got); diff != "" {
					t.Errorf("the objects differ from kubectl kustomize's (-kustomize +build):\n%s", diff)
				}
				if n := bytes.Count(stream, []byte("\n# Source: ")); n != len(docs) || !bytes.HasPrefix(stream, []byte("---\n# Source: base/namespace.yaml\n")) {
					t.Errorf("want each of the %d documents to start with ---, then # Source: <file> (the Namespace's first); %d do:\n%s", len(docs), n, stream)
				}
			})
		}
	}
}

func TestBuildRefusesAnUnknownOverlay(t *testing.T) {
	if _, err := Build(Options{}, "self-managed"); err == nil || !strings.Contains(err.Error(), "cert-manager, self-managed-certs") {
		t.Errorf("Build(self-managed) = %v, want an error listing the overlays", err)
	}
}
