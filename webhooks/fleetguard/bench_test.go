package fleetguard

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

// Benchmarks of the handler on a realistic Deployment, against an
// allow-all handler as the baseline. Run with: go test -bench . -benchmem
// ./webhooks/fleetguard/

func benchmark(b *testing.B, h admission.Handler, req admission.Request, allowed bool) {
	b.Helper()
	ctx := context.Background()
	if got := h.Handle(ctx, req); got.Allowed != allowed {
		b.Fatalf("Handle(...).Allowed = %v, want %v: %v", got.Allowed, allowed, got.Result)
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

func imageChange() *admissiontest.Request {
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0")))
}

func BenchmarkFleetguardAllowAllBaseline(b *testing.B) {
	benchmark(b, allowAll{}, imageChange().Build(), true)
}

func BenchmarkFleetguardAgentUpdate(b *testing.B) {
	benchmark(b, ignoringReplicas(), imageChange().User(fleetAgent, "system:serviceaccounts", "system:serviceaccounts:cattle-fleet-system").Build(), true)
}

func BenchmarkFleetguardHumanImageChange(b *testing.B) {
	benchmark(b, ignoringReplicas(), imageChange().Build(), false)
}

func BenchmarkFleetguardHumanIgnoredReplicas(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment, set(5, "spec", "replicas"))).Build()
	benchmark(b, ignoringReplicas(), req, true)
}

func BenchmarkFleetguardStatusOnlyUpdate(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment), obj(webDeployment, set(2, "status", "readyReplicas"))).Build()
	benchmark(b, ignoringReplicas(), req, true)
}

func BenchmarkFleetguardHumanDelete(b *testing.B) {
	benchmark(b, ignoringReplicas(), admissiontest.Delete(deploymentsGVR, "Deployment", obj(webDeployment)).Build(), false)
}

func BenchmarkFleetguardSpoofedCreate(b *testing.B) {
	benchmark(b, ignoringReplicas(), admissiontest.Create(deploymentsGVR, "Deployment", obj(webDeployment)).Build(), false)
}

func BenchmarkFleetguardHumanScale(b *testing.B) {
	benchmark(b, defaultRule(), scaleRequest(deploymentsGVR, "web", 3, 5).Build(), false)
}
