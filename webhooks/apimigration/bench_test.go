package apimigration

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

// Benchmarks of the handler on a realistic HelmRelease (chart spec plus a
// page of values), against an allow-all handler as the baseline. Run with:
// go test -run '^$' -bench Apimigration -benchmem ./webhooks/apimigration/

// realisticSpec is a HelmRelease spec of the size Git repositories hold.
func realisticSpec(version string) map[string]any {
	values := map[string]any{}
	for _, k := range []string{"replicaCount", "image", "service", "ingress", "resources", "autoscaling", "nodeSelector", "tolerations", "affinity", "podAnnotations"} {
		values[k] = map[string]any{"enabled": true, "repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.5.0",
			"annotations": map[string]any{"prometheus.io/scrape": "true", "prometheus.io/port": "9898"},
			"hosts":       []any{map[string]any{"host": "podinfo.example.org", "paths": []any{map[string]any{"path": "/", "pathType": "Prefix"}}}},
			"limits":      map[string]any{"cpu": "500m", "memory": "256Mi"}, "requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}
	}
	return map[string]any{
		"interval": "10m", "timeout": "5m", "releaseName": "podinfo", "targetNamespace": "apps",
		"chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": version,
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}},
		"install": map[string]any{"remediation": map[string]any{"retries": 3}},
		"upgrade": map[string]any{"remediation": map[string]any{"retries": 3, "remediateLastFailure": true}},
		"values":  values,
	}
}

func benchmark(b *testing.B, h admission.Handler, req admission.Request, allowed, patched bool) {
	b.Helper()
	ctx := context.Background()
	if got := h.Handle(ctx, req); got.Allowed != allowed || (len(got.Patches) > 0) != patched {
		b.Fatalf("Handle(...) = allowed %v, %d patches; want %v, patched %v: %v", got.Allowed, len(got.Patches), allowed, patched, got.Result)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.Handle(ctx, req)
	}
}

type allowAll struct{}

func (allowAll) Handle(context.Context, admission.Request) admission.Response {
	return admission.Allowed("")
}

func update(version string, oldAnn, newAnn map[string]string, oldChart, newChart string) admission.Request {
	return admissiontest.Update(gvr(helmRelease, version), "HelmRelease",
		obj(helmRelease, version, oldAnn, realisticSpec(oldChart)), obj(helmRelease, version, newAnn, realisticSpec(newChart))).Build()
}

var storedMark = marked(HelmGroup+"/v2beta1", earlier)

// BenchmarkApimigrationAllowAllBaseline is the cost of the admission
// plumbing alone, for comparison.
func BenchmarkApimigrationAllowAllBaseline(b *testing.B) {
	benchmark(b, allowAll{}, update("v2beta1", storedMark, storedMark, "6.5.0", "6.5.0"), true, false)
}

// BenchmarkApimigrationCurrentVersion: a write through v2 (never sent by
// the API server thanks to the match condition, but answered if it is).
func BenchmarkApimigrationCurrentVersion(b *testing.B) {
	benchmark(b, newRule(b, "2.6"), update("v2", nil, nil, "6.5.0", "6.6.0"), true, false)
}

// BenchmarkApimigrationDeprecatedCreate: first write, annotated.
func BenchmarkApimigrationDeprecatedCreate(b *testing.B) {
	req := admissiontest.Create(gvr(helmRelease, "v2beta1"), "HelmRelease", obj(helmRelease, "v2beta1", nil, realisticSpec("6.5.0"))).Build()
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
