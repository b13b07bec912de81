package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager of everything the
// harness writes (sample objects, webhook registrations).
const FieldManager = "steward-e2e"

const fieldOwner = client.FieldOwner(FieldManager)

// applyObjects applies every document in dir's YAML files that is not a
// CustomResourceDefinition (envtest has installed and waited for those), in
// file order, and writes a document's status through the status subresource
// as the controller that owns it would.
func applyObjects(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, u := range objs {
			if u.GetKind() == "CustomResourceDefinition" {
				continue
			}
			if err := applyWithStatus(ctx, c, u); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

// applyWithStatus server-side applies u, then its status, if any.
func applyWithStatus(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	status, hasStatus := u.Object["status"]
	obj := u.DeepCopy()
	delete(obj.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if !hasStatus {
		return nil
	}
	st := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(),
		"kind":       u.GetKind(),
		"metadata":   map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
		"status":     status,
	}}
	if u.GetNamespace() == "" {
		unstructured.RemoveNestedField(st.Object, "metadata", "namespace")
	}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the status of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// readObjects decodes every non-empty document of a multi-document YAML
// file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseObjects(path, data)
}

// ParseObjects decodes every non-empty document of a multi-document YAML
// stream (a file, or what helm template or kubectl kustomize printed);
// source names it in errors.
func ParseObjects(source string, data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := splitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// splitYAML returns the documents of a multi-document YAML stream.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufioReader(data))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
