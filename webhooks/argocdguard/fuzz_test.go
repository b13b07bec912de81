package argocdguard

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

// FuzzParseTrackingID holds the parser to Argo CD's format: it never
// panics, and an id it parses is exactly the fields it found, joined as
// Argo CD builds ids ("%s:%s/%s:%s/%s"), so re-joining gives the id back
// and parsing that gives the same fields.
func FuzzParseTrackingID(f *testing.F) {
	for _, s := range []string{
		"guestbook:apps/Deployment:default/web",
		"guestbook:/ConfigMap:default/cm",
		"team-a_web:apps/Deployment:team-a/web",
		"guestbook:rbac.authorization.k8s.io/ClusterRole:default/system:aggregate-to-edit",
		"guestbook", "guestbook:apps/Deployment", ":apps/Deployment:default/web",
		"a:b/c/d:e/f", "a:b/c:d/e/f", "a:/:/", "a::", "::::", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseTrackingID(s)
		if !ok {
			if id != (trackingID{}) {
				t.Fatalf("parseTrackingID(%q) failed but returned %+v", s, id)
			}
			return
		}
		joined := id.app + ":" + id.group + "/" + id.kind + ":" + id.namespace + "/" + id.name
		if joined != s {
			t.Fatalf("parseTrackingID(%q) = %+v, which Argo CD's format joins to %q", s, id, joined)
		}
		again, ok := parseTrackingID(joined)
		if !ok || again != id {
			t.Fatalf("parseTrackingID(%q) = %+v, %v; want %+v", joined, again, ok, id)
		}
		if id.app == "" || id.kind == "" || id.name == "" || strings.Contains(id.app, ":") ||
			strings.ContainsAny(id.group, ":/") || strings.ContainsAny(id.kind, ":/") || strings.Contains(id.namespace, "/") || strings.Contains(id.name, "/") {
			t.Fatalf("parseTrackingID(%q) = %+v: a field Argo CD's format cannot hold", s, id)
		}
	})
}

// handleSeeds are objects for FuzzHandle: realistic ones, odd ids, odd
// JSON and deep nesting.
var handleSeeds = []string{
	webDeployment,
	`{}`,
	`{"metadata": {"name": "web", "annotations": {"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web"}}}`,
	`{"metadata": {"name": "web", "annotations": {"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web"}, "labels": {"app.kubernetes.io/instance": "guestbook"}}}`,
	`{"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": 1}}}`,
	`{"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "::::"}}}`,
	`{"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "a_b_c:apps/Deployment:default/web"}}}`,
	`{"metadata": {"name": "web", "annotations": {"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web"}, "ownerReferences": [{"kind": "X", "name": "y"}, 1, null]}}`,
	`{"metadata": {"labels": {"app.kubernetes.io/instance": 1}}}`,
	`{"metadata": null, "spec": [1, "2", {"3": null}]}`,
	`{"spec": {"replicas": 9007199254740993}}`,
	`{"spec": {"replicas": "many"}}`,
	`[]`, `null`, `"string"`, `{`, ``,
	strings.Repeat(`{"a": `, 5000) + `1` + strings.Repeat(`}`, 5000),
	strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
}

// FuzzHandle runs whole requests with arbitrary objects through the
// handler, with label tracking on so every reader runs: it must answer,
// never panic.
func FuzzHandle(f *testing.F) {
	for _, s := range handleSeeds {
		f.Add(s, webDeployment, uint8(0))
		f.Add(webDeployment, s, uint8(1))
		f.Add(s, s, gitopstest.FuzzScale)
	}
	r := newRule(Config{TrackingLabel: "app.kubernetes.io/instance", OptOutGroups: []string{"platform-admins"}},
		obj(guestbookApp, ignoring(map[string]any{"group": "apps", "kind": "Deployment", "jsonPointers": []any{"/spec/replicas"}})))
	f.Fuzz(func(t *testing.T, oldObj, newObj string, op uint8) {
		req := gitopstest.FuzzRequest(op, oldObj, newObj)
		if op%gitopstest.FuzzOps == gitopstest.FuzzStatus {
			// A member of the opt-out group, whose opt-outs are judged.
			req.User("jane", "platform-admins")
		}
		gitopstest.CheckAnswers(t, r, req)
	})
}

// FuzzKeepApplication feeds arbitrary JSON, decoded as the informer
// decodes it and as encoding/json does, to the cache's transform: it
// never panics, gives the same Application for the same input, and
// accepts its own output unchanged, as informers require.
func FuzzKeepApplication(f *testing.F) {
	for _, s := range []string{
		guestbookApp,
		`{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"}`,
		`{"kind": "Application", "metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": 1}}}`,
		`{"kind": "Application", "spec": {"source": "x", "sources": [1, null, {"repoURL": 2}]}}`,
		`{"kind": "Application", "spec": {"sources": [{"repoURL": "r", "chart": "c", "path": "p"}]}}`,
		`{"kind": "Application", "spec": {"syncPolicy": {"automated": null}}}`,
		`{"kind": "Application", "spec": {"syncPolicy": {"automated": {"enabled": "yes", "selfHeal": 1}}}}`,
		`{"kind": "Application", "spec": {"syncPolicy": "automated"}}`,
		`{"kind": "Application", "spec": {"ignoreDifferences": [1, {"jsonPointers": [1, "", "x", "/a~2", "/spec"]}, {"group": 1, "kind": [], "jsonPointers": "/spec"}]}}`,
		`{"kind": "Application", "status": {"sync": {"revision": 1}, "resources": [1, null, {"name": 2, "requiresPruning": "true"}, {"group": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "a:b", "requiresPruning": true}]}}`,
		`{"kind": "Application", "status": {"resources": {"a": 1}}}`,
		`{"kind": "Application", "metadata": [], "spec": null, "status": 3}`,
		`{"kind": "Application", "spec": {"replicas": 9007199254740993, "x": 1e400}}`,
		`{}`, `[]`, `null`, `1`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil && m != nil {
			checkKeep(t, &unstructured.Unstructured{Object: m})
		}
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON([]byte(s)) == nil {
			checkKeep(t, u)
		}
	})
}

func checkKeep(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	in := u.DeepCopy()
	first, err := keepApplication(u)
	if err != nil {
		t.Fatalf("keepApplication(%v): %v", u.Object, err)
	}
	if !reflect.DeepEqual(u, in) {
		t.Fatalf("keepApplication changed its input: %v, was %v", u.Object, in.Object)
	}
	second, _ := keepApplication(u)
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("keepApplication(%v) gave %+v, then %+v", u.Object, first, second)
	}
	again, err := keepApplication(first)
	if err != nil || again != first {
		t.Fatalf("keepApplication of its own output %+v gave %+v, %v", first, again, err)
	}
}
