package harness

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Objects the e2e suites write as the GitOps tools would.

// FluxInventoryStatus is the status patch kustomize-controller records
// after applying the objects of ids (Flux inventory ids,
// <namespace>_<name>_<group>_<kind>).
func FluxInventoryStatus(ids ...string) string {
	entries := make([]string, len(ids))
	for i, id := range ids {
		entries[i] = fmt.Sprintf(`{"id":%q,"v":"v1"}`, id)
	}
	return `{"status":{"lastAppliedRevision":"main@sha1:1a2b3c4d5e6f7a8b9c0d","inventory":{"entries":[` + strings.Join(entries, ",") + `]}}}`
}

// SuspendedKustomization is a Flux Kustomization created suspended.
func SuspendedKustomization(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"interval": "10m", "path": "./deploy", "prune": true, "suspend": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"},
		},
	}}
}
