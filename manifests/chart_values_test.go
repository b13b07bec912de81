package manifests

import (
	"encoding/json"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartValuesFile reads a values file.
func chartValuesFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// withChartValues returns objs, an install `steward manifests` renders,
// changed as docs/install.md says the chart's values for adapting an
// install change it; the test then expects the chart to render exactly
// that. Names are the release's (TestChartNamesObjectsAfterTheRelease);
// values is read from a values file; in is the install objs are.
func withChartValues(t *testing.T, in install, objs []*unstructured.Unstructured, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	if enabled, _, _ := unstructured.NestedBool(values, "networkPolicy", "enabled"); enabled {
		var ports []int32
		list, _, _ := unstructured.NestedSlice(values, "networkPolicy", "apiServerPorts")
		for _, p := range list {
			ports = append(ports, int32(p.(float64)))
		}
		m, err := toMap(in.networkPolicy(ports))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	for _, o := range objs {
		o = o.DeepCopy()
		switch o.GetKind() {
		case "ServiceMonitor":
			serviceMonitorValues(t, o, values)
		case "Deployment":
			deploymentValues(t, o, values)
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			webhookValues(t, o, values)
		}
		out = append(out, o)
	}
	return out
}

// deploymentValues applies the pod's values to a Deployment.
func deploymentValues(t *testing.T, d *unstructured.Unstructured, values map[string]any) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	pod := []string{"spec", "template", "spec"}
	if l, ok := values["podLabels"].(map[string]any); ok {
		labels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		for k, v := range l {
			if _, own := labels[k]; !own {
				labels[k] = v.(string)
			}
		}
		must(unstructured.SetNestedStringMap(d.Object, labels, "spec", "template", "metadata", "labels"))
	}
	if a, ok := values["podAnnotations"].(map[string]any); ok && len(a) > 0 {
		must(unstructured.SetNestedMap(d.Object, a, "spec", "template", "metadata", "annotations"))
	}
	if s, ok := values["imagePullSecrets"].([]any); ok && len(s) > 0 {
		must(unstructured.SetNestedSlice(d.Object, s, append(pod, "imagePullSecrets")...))
	}
	if c, ok := values["topologySpreadConstraints"].([]any); ok {
		selector, _, _ := unstructured.NestedMap(d.Object, "spec", "selector")
		var constraints []any
		for _, e := range c {
			e := deepCopy(e.(map[string]any))
			if _, has := e["labelSelector"]; !has {
				e["labelSelector"] = selector
			}
			constraints = append(constraints, e)
		}
		if len(constraints) == 0 {
			unstructured.RemoveNestedField(d.Object, append(pod, "topologySpreadConstraints")...)
		} else {
			must(unstructured.SetNestedSlice(d.Object, constraints, append(pod, "topologySpreadConstraints")...))
		}
	}
	if v, ok := values["extraVolumes"].([]any); ok {
		volumes, _, _ := unstructured.NestedSlice(d.Object, append(pod, "volumes")...)
		must(unstructured.SetNestedSlice(d.Object, append(volumes, v...), append(pod, "volumes")...))
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, append(pod, "containers")...)
	for i, c := range containers {
		c := c.(map[string]any)
		if c["name"] != Name {
			continue
		}
		// The webhooks value is also what Steward keeps of the install's
		// choices when it repairs its registration.
		if w, ok := values["webhooks"].(map[string]any); ok && len(w) > 0 {
			data, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			args, _ := c["args"].([]any)
			c["args"] = append(args, "--registration-overrides="+string(data))
		}
		for value, field := range map[string]string{"extraArgs": "args", "extraEnvVars": "env", "extraVolumeMounts": "volumeMounts"} {
			if extra, ok := values[value].([]any); ok {
				list, _ := c[field].([]any)
				c[field] = append(list, extra...)
			}
		}
		if p, ok := values["startupProbe"].(map[string]any); ok && len(p) > 0 {
			c["startupProbe"] = p
		}
		containers[i] = c
	}
	must(unstructured.SetNestedSlice(d.Object, containers, append(pod, "containers")...))
}

// webhookValues applies the webhooks value to a webhook configuration.
func webhookValues(t *testing.T, c *unstructured.Unstructured, values map[string]any) {
	t.Helper()
	settings, _ := values["webhooks"].(map[string]any)
	whs, _, _ := unstructured.NestedSlice(c.Object, "webhooks")
	annotations := c.GetAnnotations()
	for i, wh := range whs {
		wh := wh.(map[string]any)
		set, ok := settings[wh["name"].(string)].(map[string]any)
		if !ok {
			continue
		}
		if p, ok := set["failurePolicy"]; ok && p != wh["failurePolicy"] {
			key := failurePolicyAnnotation + wh["name"].(string)
			annotations[key] = p.(string) + ": set by the install (the chart's webhooks value). Steward's own choice is " + annotations[key]
			wh["failurePolicy"] = p
		}
		if s, ok := set["timeoutSeconds"]; ok {
			wh["timeoutSeconds"] = s
		}
		for _, sel := range []string{"namespaceSelector", "objectSelector"} {
			extra, _, _ := unstructured.NestedSlice(set, sel, "matchExpressions")
			if len(extra) == 0 {
				continue
			}
			exprs, _, _ := unstructured.NestedSlice(wh, sel, "matchExpressions")
			if err := unstructured.SetNestedSlice(wh, append(exprs, extra...), sel, "matchExpressions"); err != nil {
				t.Fatal(err)
			}
		}
		whs[i] = wh
	}
	c.SetAnnotations(annotations)
	if err := unstructured.SetNestedSlice(c.Object, whs, "webhooks"); err != nil {
		t.Fatal(err)
	}
}

// serviceMonitorValues applies monitoring.serviceMonitor's additionalLabels
// and interval to the ServiceMonitor.
func serviceMonitorValues(t *testing.T, sm *unstructured.Unstructured, values map[string]any) {
	t.Helper()
	labels := sm.GetLabels()
	extra, _, _ := unstructured.NestedStringMap(values, "monitoring", "serviceMonitor", "additionalLabels")
	for k, v := range extra {
		if _, own := labels[k]; !own {
			labels[k] = v
		}
	}
	sm.SetLabels(labels)
	if interval, ok, _ := unstructured.NestedString(values, "monitoring", "serviceMonitor", "interval"); ok {
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		for _, e := range endpoints {
			e.(map[string]any)["interval"] = interval
		}
		if err := unstructured.SetNestedSlice(sm.Object, endpoints, "spec", "endpoints"); err != nil {
			t.Fatal(err)
		}
	}
}
