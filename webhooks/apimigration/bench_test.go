package apimigration

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Benchmarks of the handler on a realistic HelmRelease (metadata with
// managedFields, chart spec plus a page of values, status with conditions
// and release history: about 11 KB of JSON), against an allow-all handler as the baseline. Run with:
// go test -run '^$' -bench Apimigration -benchmem ./webhooks/apimigration/

// realisticSpec is a HelmRelease spec of the size Git repositories hold:
// chart, remediation and a page of values, including a multi-line config
// file (a string full of escapes once encoded).
func realisticSpec(version string) map[string]any {
	values := map[string]any{}
	for _, k := range []string{"replicaCount", "image", "service", "ingress", "resources", "autoscaling", "nodeSelector", "tolerations", "affinity", "podAnnotations"} {
		values[k] = map[string]any{"enabled": true, "repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.5.0",
			"annotations": map[string]any{"prometheus.io/scrape": "true", "prometheus.io/port": "9898"},
			"hosts":       []any{map[string]any{"host": "podinfo.example.org", "paths": []any{map[string]any{"path": "/", "pathType": "Prefix"}}}},
			"limits":      map[string]any{"cpu": "500m", "memory": "256Mi"}, "requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}
	}
	values["config"] = map[string]any{"podinfo.yaml": "server:\n  port: 9898\n  grpc: 9999\n  logLevel: info\n" +
		"ui:\n  color: \"#34577c\"\n  message: \"greetings from <podinfo> & friends\"\n" +
		"cache:\n  server: tcp://redis:6379\n  ttl: 300\n"}
	return map[string]any{
		"interval": "10m", "timeout": "5m", "releaseName": "podinfo", "targetNamespace": "apps",
		"chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": version,
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}},
		"install": map[string]any{"remediation": map[string]any{"retries": 3}},
		"upgrade": map[string]any{"remediation": map[string]any{"retries": 3, "remediateLastFailure": true}},
		"values":  values,
	}
}

// fieldsV1 is the managedFields entry of a value: its keys as "f:" sets.
func fieldsV1(v any) map[string]any {
	out := map[string]any{}
	if m, ok := v.(map[string]any); ok {
		for k, sub := range m {
			out["f:"+k] = fieldsV1(sub)
		}
	}
	return out
}

// realisticHelmRelease is a HelmRelease as the API server sends it in an
// admission request: applied by kustomize-controller with server-side
// apply, with the managedFields, finalizer and status (conditions and
// release history) helm-controller adds, and the chart spec above.
// annotations may be nil.
func realisticHelmRelease(version, chart string, annotations map[string]string) map[string]any {
	o := obj(helmRelease, version, annotations, realisticSpec(chart))
	meta := o["metadata"].(map[string]any)
	meta["generation"] = 7
	meta["creationTimestamp"] = "2025-11-02T09:14:03Z"
	meta["uid"] = "6f1d2c3a-8b4e-4f5a-9c7d-2e1f0a3b4c5d"
	meta["resourceVersion"] = "48213377"
	meta["finalizers"] = []any{"finalizers.fluxcd.io"}
	meta["labels"] = map[string]any{"app.kubernetes.io/name": "podinfo",
		KustomizeGroup + "/name": "apps", KustomizeGroup + "/namespace": "flux-system"}
	applied := map[string]any{"f:metadata": map[string]any{"f:labels": fieldsV1(meta["labels"])}, "f:spec": fieldsV1(o["spec"])}
	meta["managedFields"] = []any{
		map[string]any{"apiVersion": HelmGroup + "/" + version, "fieldsType": "FieldsV1", "fieldsV1": applied,
			"manager": "kustomize-controller", "operation": "Apply", "time": "2026-04-30T12:00:00Z"},
		map[string]any{"apiVersion": HelmGroup + "/v2", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:finalizers": map[string]any{".": map[string]any{}, "v:\"finalizers.fluxcd.io\"": map[string]any{}}}},
			"manager":  "helm-controller", "operation": "Update", "time": "2025-11-02T09:14:03Z"},
		map[string]any{"apiVersion": HelmGroup + "/v2", "fieldsType": "FieldsV1", "subresource": "status",
			"fieldsV1": map[string]any{"f:status": map[string]any{"f:conditions": map[string]any{}, "f:history": map[string]any{},
				"f:lastAttemptedRevision": map[string]any{}, "f:observedGeneration": map[string]any{}}},
			"manager": "helm-controller", "operation": "Update", "time": "2026-04-30T12:00:05Z"},
	}
	condition := func(typ, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": message,
			"lastTransitionTime": "2026-04-30T12:00:05Z", "observedGeneration": 7}
	}
	var history []any
	for i, v := range []string{"6.5.0", "6.4.1", "6.4.0", "6.3.6", "6.3.5"} {
		history = append(history, map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "name": "podinfo", "namespace": "apps",
			"chartName": "podinfo", "chartVersion": v, "version": 12 - i, "status": "superseded",
			"configDigest":  "sha256:1dc4ee3f8d2e7f1c5a9b0e6d4c3b2a190817f6e5d4c3b2a1908f7e6d5c4b3a29",
			"digest":        "sha256:9f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a2918070f6e5d4c3b2a1",
			"firstDeployed": "2025-11-02T09:14:10Z", "lastDeployed": "2026-04-30T12:00:04Z",
			"testHooks": map[string]any{"podinfo-grpc-test-xhgxz": map[string]any{"lastStarted": "2026-04-30T12:00:04Z", "lastCompleted": "2026-04-30T12:00:05Z", "phase": "Succeeded"}}})
	}
	o["status"] = map[string]any{
		"conditions": []any{
			condition("Ready", "UpgradeSucceeded", "Helm upgrade succeeded for release apps/podinfo.v12 with chart podinfo@6.5.0"),
			condition("Released", "UpgradeSucceeded", "Helm upgrade succeeded for release apps/podinfo.v12 with chart podinfo@6.5.0"),
			condition("TestSuccess", "TestSucceeded", "Helm test succeeded for release apps/podinfo.v12 with chart podinfo@6.5.0: 1 test hook completed successfully"),
		},
		"history":                    history,
		"helmChart":                  "flux-system/apps-podinfo",
		"lastAttemptedConfigDigest":  "sha256:1dc4ee3f8d2e7f1c5a9b0e6d4c3b2a190817f6e5d4c3b2a1908f7e6d5c4b3a29",
		"lastAttemptedGeneration":    7,
		"lastAttemptedReleaseAction": "upgrade",
		"lastAttemptedRevision":      "6.5.0",
		"lastHandledReconcileAt":     "2026-04-30T11:59:58Z",
		"observedGeneration":         7,
		"storageNamespace":           "apps",
	}
	return o
}

func benchmark(b *testing.B, h rule.Rule, req admission.Request, allowed, patched bool) {
	b.Helper()
	ruletest.BenchmarkVerdict(b, h, req, func(got admission.Response) error {
		if got.Allowed != allowed || (len(got.Patches) > 0) != patched {
			return fmt.Errorf("Handle(...) = allowed %v, %d patches; want %v, patched %v: %v", got.Allowed, len(got.Patches), allowed, patched, got.Result)
		}
		return nil
	})
}

func update(version string, oldAnn, newAnn map[string]string, oldChart, newChart string) admission.Request {
	return admissiontest.Update(gvr(helmRelease, version), "HelmRelease",
		realisticHelmRelease(version, oldChart, oldAnn), realisticHelmRelease(version, newChart, newAnn)).Build()
}

var storedMark = marked(HelmGroup+"/v2beta1", earlier)

// BenchmarkApimigrationAllowAllBaseline is the cost of the admission
// plumbing alone, for comparison.
func BenchmarkApimigrationAllowAllBaseline(b *testing.B) {
	benchmark(b, ruletest.AllowAll{}, update("v2beta1", storedMark, storedMark, "6.5.0", "6.5.0"), true, false)
}

// BenchmarkApimigrationCurrentVersion: a write through v2 (never sent by
// the API server thanks to the match condition, but answered if it is).
func BenchmarkApimigrationCurrentVersion(b *testing.B) {
	benchmark(b, newRule(b, "2.6"), update("v2", nil, nil, "6.5.0", "6.6.0"), true, false)
}

// BenchmarkApimigrationDeprecatedCreate: first write, annotated.
func BenchmarkApimigrationDeprecatedCreate(b *testing.B) {
	req := admissiontest.Create(gvr(helmRelease, "v2beta1"), "HelmRelease", realisticHelmRelease("v2beta1", "6.5.0", nil)).Build()
	benchmark(b, newRule(b, "2.6"), req, true, true)
}

// BenchmarkApimigrationUnchangedReapply: the GitOps steady state, the most
// frequent request: unchanged spec, mark kept, no patch.
func BenchmarkApimigrationUnchangedReapply(b *testing.B) {
	benchmark(b, newRule(b, "2.6"), update("v2beta1", storedMark, storedMark, "6.5.0", "6.5.0"), true, false)
}

// BenchmarkApimigrationReplaceDroppingMark: unchanged spec, annotations
// restored from the stored object.
func BenchmarkApimigrationReplaceDroppingMark(b *testing.B) {
	benchmark(b, newRule(b, "2.6"), update("v2beta1", storedMark, nil, "6.5.0", "6.5.0"), true, true)
}

// BenchmarkApimigrationSpecChange: spec changed, fresh mark.
func BenchmarkApimigrationSpecChange(b *testing.B) {
	benchmark(b, newRule(b, "2.6"), update("v2beta1", storedMark, storedMark, "6.5.0", "6.6.0"), true, true)
}

// BenchmarkApimigrationRemovedVersion: refused.
func BenchmarkApimigrationRemovedVersion(b *testing.B) {
	benchmark(b, newRule(b, "2.8"), update("v2beta2", nil, nil, "6.5.0", "6.6.0"), false, false)
}
