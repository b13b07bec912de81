package manifests

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDeploymentGivesStewardItsMemoryLimit proves, for each overlay as
// installed, that Steward's container has a memory limit and reads it, in
// bytes, from $MEMORY_LIMIT, from which it sets Go's soft memory limit.
func TestDeploymentGivesStewardItsMemoryLimit(t *testing.T) {
	for _, overlay := range overlayNames {
		t.Run(overlay, func(t *testing.T) {
			in := kustomizeBuild(t, overlay)
			if len(in.deployments) != 1 {
				t.Fatalf("overlays/%s renders %d Deployments, want 1", overlay, len(in.deployments))
			}
			c := in.deployments[0].Spec.Template.Spec.Containers[0]
			if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Errorf("container %s has no memory limit", c.Name)
			}
			if err := checkMemoryLimitEnv(c); err != "" {
				t.Error(err)
			}
		})
	}
}

func checkMemoryLimitEnv(c corev1.Container) string {
	for _, e := range c.Env {
		if e.Name != "MEMORY_LIMIT" {
			continue
		}
		ref := (*corev1.ResourceFieldSelector)(nil)
		if e.ValueFrom != nil {
			ref = e.ValueFrom.ResourceFieldRef
		}
		if ref == nil || ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) || ref.Divisor.String() != "1" {
			return "MEMORY_LIMIT must come from this container's limits.memory, in bytes (divisor 1)"
		}
		return ""
	}
	return "container " + c.Name + " has no MEMORY_LIMIT"
}
