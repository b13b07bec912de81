package serving_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// benchDeployment is a Deployment as Fleet deploys it: Fleet's and Helm's
// labels and annotations, one container with probes, resources, a security
// context and volumes; about 2.5 KB of JSON, like the objects the API
// server sends most.
func benchDeployment(image string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop", "uid": "5c7e0b9e-4f6c-4a53-9e55-8e4d7f0b1a2c",
			"resourceVersion": "123456", "generation": 7, "creationTimestamp": "2026-01-01T00:00:00Z",
			"labels": map[string]any{
				"objectset.rio.cattle.io/hash": "1f0c3ec2f7a5cb6e0b2f2c4d1c1e9f6a0a7a3c5b",
				"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "web",
			},
			"annotations": map[string]any{
				"objectset.rio.cattle.io/id":        "default-shop-web",
				"meta.helm.sh/release-name":         "shop-web",
				"meta.helm.sh/release-namespace":    "shop",
				"deployment.kubernetes.io/revision": "7",
			},
		},
		"spec": map[string]any{
			"replicas": 3,
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "web"}},
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]any{"app.kubernetes.io/name": "web"},
					"annotations": map[string]any{"checksum/config": "5e0c4f7c2d"},
				},
				"spec": map[string]any{
					"serviceAccountName": "web",
					"securityContext":    map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
					"containers": []any{map[string]any{
						"name": "web", "image": image,
						"ports": []any{
							map[string]any{"name": "http", "containerPort": 8080, "protocol": "TCP"},
							map[string]any{"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
						},
						"env": []any{
							map[string]any{"name": "LOG_LEVEL", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "web-config", "key": "LOG_LEVEL"}}},
							map[string]any{"name": "GOMAXPROCS", "value": "2"},
						},
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "250m", "memory": "256Mi"},
							"limits":   map[string]any{"memory": "512Mi"},
						},
						"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": "http"}, "periodSeconds": 5},
						"livenessProbe":  map[string]any{"httpGet": map[string]any{"path": "/livez", "port": "http"}, "periodSeconds": 10},
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
							"capabilities": map[string]any{"drop": []any{"ALL"}},
						},
						"volumeMounts": []any{map[string]any{"name": "tmp", "mountPath": "/tmp"}},
					}},
					"volumes": []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
				},
			},
		},
		"status": map[string]any{"observedGeneration": 7, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3},
	}
}

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// benchRequest is an image change of a Fleet-managed Deployment by a person.
func benchRequest() admission.Request {
	return admissiontest.Update(deploymentsGVR, "Deployment",
		benchDeployment("registry.example.com/shop/web:1.42.0"),
		benchDeployment("registry.example.com/shop/web:1.42.1")).
		User("jane", "devs", "system:authenticated").Build()
}

// jsonLog is Steward's production logger (JSON through zap), writing
// nowhere, so the decision line's encoding cost is measured.
func jsonLog() logr.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zapr.NewLogger(zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel)))
}

var validatingWebhook = rule.Webhook{Name: "bench.steward.dev", Path: "/validate/bench", FailurePolicy: admissionregistrationv1.Fail}

// BenchmarkWrapAllowAll is the floor every rule's handler benchmark is
// compared with: serving.Wrap around a rule that allows everything without
// reading the request, on a realistic Deployment update. Handle is the
// wrapper alone; ServeHTTP adds what is done around it for each call from
// the API server (decoding the AdmissionReview, encoding the answer), by
// controller-runtime's admission.Webhook and by serving.Serve. DenyAll shows
// the cost of a denial: the audit annotations, the JSON decision log line
// and the counter.
func BenchmarkWrapAllowAll(b *testing.B) {
	ctx := context.Background()
	req := benchRequest()
	allow := fakeRule{name: "allowall", typ: rule.Validating, resp: admission.Allowed("")}
	deny := fakeRule{name: "denyall", typ: rule.Validating, resp: admission.Denied("denyall: Deployment shop/web is managed by Fleet")}
	opts := serving.Options{Mode: rule.Enforce, BreakGlassGroup: "steward:break-glass", Log: jsonLog()}

	b.Run("Handle", func(b *testing.B) {
		h := serving.Wrap(allow, validatingWebhook, opts)
		b.ReportAllocs()
		for b.Loop() {
			if resp := h.Handle(ctx, req); !resp.Allowed {
				b.Fatal("denied")
			}
		}
	})
	b.Run("DenyAll", func(b *testing.B) {
		h := serving.Wrap(deny, validatingWebhook, opts)
		b.ReportAllocs()
		for b.Loop() {
			if resp := h.Handle(ctx, req); resp.Allowed {
				b.Fatal("allowed")
			}
		}
	})
	// The same call over HTTP: controller-runtime's admission.Webhook, as
	// the allow-all peer serves it, then serving.Serve, as Steward does.
	httpCases := map[string]func(admission.Handler) http.Handler{
		"ServeHTTP/ControllerRuntime": func(h admission.Handler) http.Handler { return &admission.Webhook{Handler: h} },
		"ServeHTTP/Serve":             func(h admission.Handler) http.Handler { return serving.Serve(h, logr.Discard()) },
	}
	for name, serveWith := range httpCases {
		b.Run(name, func(b *testing.B) {
			wh := serveWith(serving.Wrap(allow, validatingWebhook, opts))
			body := reviewBody(b, req)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, validatingWebhook.Path, bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				wh.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"allowed":true`)) {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// reviewBody is the AdmissionReview the API server would send for req.
func reviewBody(b *testing.B, req admission.Request) []byte {
	b.Helper()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req.AdmissionRequest,
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}
