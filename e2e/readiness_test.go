package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/e2e/harness"
)

// TestNotReadyAndNoCacheAnswersUntilCachesSync starts a Steward whose
// Deployment informer cannot sync: a proxy holds back the API server's
// answer to its list (or watch-list). It proves that while the webhook server already
// serves, /readyz stays unready (naming the informer caches), so no
// Service would route to it, and that a request that needs the cache (a
// scale of a Fleet-managed Deployment) is not decided from the empty
// cache: fleetguard's scale webhook answers that it could not check.
// Once the list goes through, Steward becomes ready and the same request
// gets fleetguard's denial, read from the synced cache.
func TestNotReadyAndNoCacheAnswersUntilCachesSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := testNamespace(t, ctx, "readiness")
	agent := userClient(t, fleetAgent, nil, nil)
	web := webDeployment("web", fleetManaged(ns, "web"), 1)
	if err := agent.Create(ctx, web); err != nil {
		t.Fatalf("the Fleet agent creating a Deployment: %v", err)
	}

	proxy := startAPIProxy(t, "")
	proxy.hold(func(r *http.Request) bool { return readsCollection(r, "/apis/apps/v1/deployments") })
	p := startStewardProc(t, ctx, procOptions{kubeconfig: proxy.kubeconfig, noWait: true})
	if err := harness.Poll(ctx, harness.ReadyTimeout, func() error {
		if p.exited() {
			return fmt.Errorf("steward exited:\n%s", tail(p.log(), 20))
		}
		_, err := servedLeaf(p.port)
		return err
	}); err != nil {
		t.Fatalf("the webhook server never started: %v", err)
	}

	scale := func() (*admissionv1.AdmissionResponse, error) {
		scaleOf := func(n int) []byte {
			return mustJSON(t, map[string]any{
				"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": "web", "namespace": ns},
				"spec":     map[string]any{"replicas": n},
			})
		}
		req := janeRequest(admissionv1.Update, metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
			metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web", scaleOf(3), scaleOf(1))
		req.SubResource = "scale"
		body := reviewJSON(t, req)
		res, err := postReview(ctx, webhookClient(pool(p.ca.pem)), p.url("/validate/fleetguard/scale"), "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if res.review.Response == nil {
			return nil, fmt.Errorf("no answer: %s", res)
		}
		return res.review.Response, nil
	}

	t.Run("UnreadyWhileTheCacheCannotSync", func(t *testing.T) {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			code, body, err := p.readyz()
			if err != nil {
				t.Fatalf("/readyz: %v", err)
			}
			if code == http.StatusOK {
				t.Fatalf("/readyz is 200 while the Deployment informer cannot list:\n%s", body)
			}
			if !strings.Contains(body, "[-]informer-caches") {
				t.Fatalf("/readyz is %d without naming the informer caches:\n%s", code, body)
			}
		}
	})
	t.Run("NoAnswerFromTheUnsyncedCache", func(t *testing.T) {
		r, err := scale()
		if err != nil {
			t.Fatal(err)
		}
		msg := ""
		if r.Result != nil {
			msg = r.Result.Message
		}
		warnings := strings.Join(r.Warnings, "\n")
		if strings.Contains(msg, "managed by Fleet") || !strings.Contains(warnings, "could not check") {
			t.Errorf("a scale request was decided while the cache had not synced: allowed %v, message %q, warnings %q", r.Allowed, msg, warnings)
		}
	})

	proxy.releaseAll()
	if err := p.waitReady(ctx, harness.ReadyTimeout); err != nil {
		t.Fatalf("steward did not become ready once the cache could sync: %v", err)
	}
	t.Run("AnswersFromTheSyncedCache", func(t *testing.T) {
		harness.Eventually(t, 10*time.Second, func() error {
			r, err := scale()
			if err != nil {
				return err
			}
			if r.Allowed || r.Result == nil || !strings.HasPrefix(r.Result.Message, "fleetguard: Deployment "+ns+"/web is managed by Fleet") {
				return fmt.Errorf("after the cache synced, a scale of a Fleet-managed Deployment got allowed %v, %+v; want fleetguard's denial", r.Allowed, r.Result)
			}
			return nil
		})
	})
}
