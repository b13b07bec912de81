package fleetguard

import (
	"testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// Benchmarks of the handler on a realistic Deployment, against an
// allow-all handler as the baseline. Run with: go test -bench . -benchmem
// ./webhooks/fleetguard/

// benchmark times h on req, which it allows or refuses as allowed says.
var benchmark = gitopstest.Benchmark

// The new objects below are what the API server sends a validating
// webhook: it has already recorded the writer in managedFields and, for a
// change of the spec, bumped the generation, so the metadata differs on
// every update even when nothing guarded changed.

// written appends the managedFields entry the API server records for a
// write by manager at time t.
var written = gitopstest.Written

// fields builds a fieldsV1 set from paths of field keys.
func fields(paths ...[]string) map[string]any {
	root := map[string]any{}
	for _, p := range paths {
		at(root, p...)
	}
	return root
}

var webImageFields = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"web"}`, "f:image"}

func imageChange() *admissiontest.Request {
	return admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"), set(4, "metadata", "generation"),
			written("kubectl-set", "2026-01-12T10:00:00Z", "", fields(webImageFields))))
}

// lastApplied is what kubectl apply records of a manifest for the web
// Deployment.
const lastApplied = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":{"app.kubernetes.io/managed-by":"Helm","app.kubernetes.io/name":"web","objectset.rio.cattle.io/hash":"3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"},"name":"web","namespace":"default"},"spec":{"replicas":3,"selector":{"matchLabels":{"app.kubernetes.io/name":"web"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"web"}},"spec":{"containers":[{"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"PORT","value":"8080"}],"image":"ghcr.io/example/web:1.5.0","name":"web","ports":[{"containerPort":8080,"name":"http"}],"readinessProbe":{"httpGet":{"path":"/healthz","port":"http"}},"resources":{"limits":{"memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}}},{"image":"ghcr.io/example/proxy:2.0.1","name":"proxy"}],"securityContext":{"runAsNonRoot":true}}}}}
`

func BenchmarkFleetguardAllowAllBaseline(b *testing.B) {
	benchmark(b, ruletest.AllowAll{}, imageChange().Build(), true)
}

func BenchmarkFleetguardAgentUpdate(b *testing.B) {
	benchmark(b, ignoringReplicas(), imageChange().User(fleetAgent, "system:serviceaccounts", "system:serviceaccounts:cattle-fleet-system").Build(), true)
}

func BenchmarkFleetguardHumanImageChange(b *testing.B) {
	benchmark(b, ignoringReplicas(), imageChange().Build(), false)
}

// A kubectl apply of a changed image: the new object also carries
// kubectl's last-applied-configuration annotation, which is not guarded.
func BenchmarkFleetguardHumanApplyImageChange(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, container(0, "image", "ghcr.io/example/web:1.5.0"), set(4, "metadata", "generation"),
			set(lastApplied, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
			written("kubectl-client-side-apply", "2026-01-12T10:00:00Z", "", fields(webImageFields,
				[]string{"f:metadata", "f:annotations", "f:kubectl.kubernetes.io/last-applied-configuration"})))).Build()
	benchmark(b, ignoringReplicas(), req, false)
}

func BenchmarkFleetguardHumanIgnoredReplicas(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, set(5, "spec", "replicas"), set(4, "metadata", "generation"),
			written("kubectl-edit", "2026-01-12T10:00:00Z", "", fields([]string{"f:spec", "f:replicas"})))).Build()
	benchmark(b, ignoringReplicas(), req, true)
}

func BenchmarkFleetguardStatusOnlyUpdate(b *testing.B) {
	req := admissiontest.Update(deploymentsGVR, "Deployment", obj(webDeployment),
		obj(webDeployment, set(2, "status", "readyReplicas"),
			written("kube-controller-manager", "2026-01-12T10:00:00Z", "", fields([]string{"f:status", "f:readyReplicas"})))).Build()
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
