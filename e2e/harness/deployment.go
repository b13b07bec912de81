package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// RenderedMemoryLimit reads the memory limit, in bytes, of Steward's
// container in manifests/base/deployment.yaml. The harness gives it to every
// Steward it starts as $MEMORY_LIMIT, as the Deployment does through the
// Downward API, so tests and benchmarks run with the shipped soft memory
// limit.
func RenderedMemoryLimit() (int64, error) {
	d, path, err := renderedDeployment()
	if err != nil {
		return 0, err
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if q, ok := c.Resources.Limits["memory"]; ok {
			return q.Value(), nil
		}
	}
	return 0, fmt.Errorf("%s: no container has a memory limit", path)
}

// renderedDeployment reads manifests/base/deployment.yaml.
func renderedDeployment() (*appsv1.Deployment, string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(root, "manifests", "base", "deployment.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("reading the rendered Deployment (run `make generate`): %w", err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return &d, path, nil
}

// Shutdown is how the rendered Deployment has Steward shut down: its
// --shutdown-delay and --shutdown-timeout, and the Pod's
// terminationGracePeriodSeconds.
type Shutdown struct {
	Delay, Timeout time.Duration
	GracePeriod    time.Duration
}

// Args are the flags that set Delay and Timeout.
func (s Shutdown) Args() []string {
	return []string{"--shutdown-delay=" + s.Delay.String(), "--shutdown-timeout=" + s.Timeout.String()}
}

// RenderedShutdown reads the shutdown settings of Steward's container in
// manifests/base/deployment.yaml (and so the chart's defaults, which
// render the same), so that tests of replicas run with what ships.
func RenderedShutdown() (Shutdown, error) {
	d, path, err := renderedDeployment()
	if err != nil {
		return Shutdown{}, err
	}
	var out Shutdown
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		out.GracePeriod = time.Duration(*g) * time.Second
	} else {
		return out, fmt.Errorf("%s: no terminationGracePeriodSeconds", path)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for name, dst := range map[string]*time.Duration{"shutdown-delay": &out.Delay, "shutdown-timeout": &out.Timeout} {
			v, ok := flagValue(c.Args, name)
			if !ok {
				return out, fmt.Errorf("%s: container %s has no --%s", path, c.Name, name)
			}
			if *dst, err = time.ParseDuration(v); err != nil {
				return out, fmt.Errorf("%s: --%s: %w", path, name, err)
			}
		}
	}
	return out, nil
}

// RenderedReplicas reads the replicas of manifests/base/deployment.yaml
// (the chart's default).
func RenderedReplicas() (int, error) {
	d, path, err := renderedDeployment()
	if err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 0, fmt.Errorf("%s: no replicas", path)
	}
	return int(*d.Spec.Replicas), nil
}
