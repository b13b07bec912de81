package harness

import (
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// RenderedMemoryLimit reads the memory limit, in bytes, of Steward's
// container in manifests/base/deployment.yaml. The harness gives it to every
// Steward it starts as $MEMORY_LIMIT, as the Deployment does through the
// Downward API, so tests and benchmarks run with the shipped soft memory
// limit.
func RenderedMemoryLimit() (int64, error) {
	root, err := RepoRoot()
	if err != nil {
		return 0, err
	}
	path := filepath.Join(root, "manifests", "base", "deployment.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the rendered Deployment (run `make generate`): %w", err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if q, ok := c.Resources.Limits["memory"]; ok {
			return q.Value(), nil
		}
	}
	return 0, fmt.Errorf("%s: no container has a memory limit", path)
}
