package harness

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ReportResults lists a PolicyReport's results as
// policy/rule/result/kind/name, sorted: what the audit's tests compare.
func ReportResults(u *unstructured.Unstructured) []string {
	results, _, _ := unstructured.NestedSlice(u.Object, "results")
	var out []string
	for _, r := range results {
		m, _ := r.(map[string]any)
		resources, _ := m["resources"].([]any)
		var kind, name string
		if len(resources) > 0 {
			ref, _ := resources[0].(map[string]any)
			kind, _ = ref["kind"].(string)
			name, _ = ref["name"].(string)
		}
		out = append(out, fmt.Sprintf("%v/%v/%v/%s/%s", m["policy"], m["rule"], m["result"], kind, name))
	}
	slices.Sort(out)
	return out
}
