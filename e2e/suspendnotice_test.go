package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

const (
	snNS          = "flux-suspend"
	snPath        = "/mutate/suspendnotice"
	snEventsPath  = "/mutate/suspendnotice/events"
	snHook        = "suspendnotice.steward.dev"
	snEventsHook  = "suspendnotice-events.steward.dev"
	snSuspendedBy = "steward.dev/suspended-by"
	snSuspendedAt = "steward.dev/suspended-at"
	snController  = "system:serviceaccount:flux-system:kustomize-controller"
	snFinished    = "Reconciliation finished in 1.2s, next run in 10m0s"
	snRewritten   = "Reconciliation finished in 1.2s (suspended: no further runs until resumed)"
)

func snKustomization(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": snNS},
		"spec": map[string]any{
			"interval":  "10m",
			"path":      "./deploy",
			"prune":     true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"},
		},
	}}
}

func snGet(ctx context.Context, t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	u := snKustomization(name)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// snEventName names an event as client-go's recorder does: the object's
// name and a unique suffix.
func snEventName(about string) string {
	return fmt.Sprintf("%s.%x", about, time.Now().UnixNano())
}

func snRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: name, Namespace: snNS}
}

// snCoreEvent records a core/v1 event as client-go's recorder does for
// Flux's controllers, and returns it as stored.
func snCoreEvent(ctx context.Context, t *testing.T, component, about, message string) *corev1.Event {
	t.Helper()
	c, err := env.As(snController)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: snEventName(about), Namespace: snNS},
		InvolvedObject: snRef(about),
		Reason:         "ReconciliationSucceeded",
		Message:        message,
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: component},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if err := c.Create(ctx, ev); err != nil {
		t.Fatalf("recording an event: %v", err)
	}
	stored := &corev1.Event{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

func snEventsV1(ctx context.Context, t *testing.T, controller, about, note string) *eventsv1.Event {
	t.Helper()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: snEventName(about), Namespace: snNS},
		EventTime:           metav1.NowMicro(),
		ReportingController: controller,
		ReportingInstance:   controller + "-6f7d9c",
		Action:              "Reconcile",
		Reason:              "ReconciliationSucceeded",
		Regarding:           snRef(about),
		Note:                note,
		Type:                corev1.EventTypeNormal,
	}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatalf("recording an events.k8s.io/v1 event: %v", err)
	}
	stored := &eventsv1.Event{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

func snErrors(ctx context.Context, t *testing.T) float64 {
	return celErrors(ctx, t, snHook) + celErrors(ctx, t, snEventsHook)
}

// TestSuspendNotice proves suspendnotice through the real API server and
// kubectl: suspending records who and when and warns, resuming removes the
// record; a Flux controller's "next run in" event about a suspended object
// is stored rewritten, while other components' events and events about
// objects that are not suspended are stored as written, the former without
// ever reaching Steward.
func TestSuspendNotice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: snNS}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "api", "bare"} {
		ks := snKustomization(name)
		if name == "bare" {
			delete(ks.Object, "spec")
		}
		if err := env.Client.Create(ctx, ks); err != nil {
			t.Fatal(err)
		}
	}
	errorsBefore := snErrors(ctx, t)

	t.Run("SuspendingWarnsAndRecordsWhoAndWhen", func(t *testing.T) {
		start := time.Now().Add(-time.Second).Truncate(time.Second)
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", snNS, "patch", "kustomization", "web", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
		if err != nil {
			t.Fatalf("suspending: %v", err)
		}
		want := "Warning: suspendnotice: Kustomization flux-suspend/web is suspended and will not reconcile until resumed: flux resume kustomization web -n flux-suspend"
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's warnings:\n%s\nwant:\n%s", stderr, want)
		}
		a := snGet(ctx, t, "web").GetAnnotations()
		if a[snSuspendedBy] != "jane" {
			t.Errorf("%s = %q, want jane", snSuspendedBy, a[snSuspendedBy])
		}
		at, err := time.Parse(time.RFC3339, a[snSuspendedAt])
		if err != nil || at.Before(start) || at.After(time.Now().Add(time.Second)) || at.Location() != time.UTC {
			t.Errorf("%s = %q, want the time of the suspension in RFC 3339 UTC (%v)", snSuspendedAt, a[snSuspendedAt], err)
		}
	})

	t.Run("SuspendingAgainChangesNothingAndSkipsSteward", func(t *testing.T) {
		before, calls := snGet(ctx, t, "web").GetAnnotations(), pathCalls(t, snPath)
		_, stderr, err := env.Kubectl(ctx, "", "--as", "alice", "-n", snNS, "patch", "kustomization", "web", "--type=merge", "-p", `{"spec":{"suspend":true},"metadata":{"labels":{"team":"web"}}}`)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr, "suspendnotice") {
			t.Errorf("no warning when spec.suspend does not change, got:\n%s", stderr)
		}
		if after := snGet(ctx, t, "web").GetAnnotations(); after[snSuspendedBy] != before[snSuspendedBy] || after[snSuspendedAt] != before[snSuspendedAt] {
			t.Errorf("the record changed from %v to %v", before, after)
		}
		if after := pathCalls(t, snPath); after != calls {
			t.Errorf("an update that leaves spec.suspend alone reached Steward %v times", after-calls)
		}
	})

	t.Run("EventAboutSuspendedObjectIsStoredRewritten", func(t *testing.T) {
		// Steward's metadata cache sees the suspension a moment after it
		// was written; until then events pass as written.
		harness.Eventually(t, 20*time.Second, func() error {
			if ev := snCoreEvent(ctx, t, "kustomize-controller", "web", snFinished); ev.Message != snRewritten {
				return fmt.Errorf("stored message %q, want %q", ev.Message, snRewritten)
			}
			return nil
		})
		if ev := snEventsV1(ctx, t, "kustomize-controller", "web", snFinished); ev.Note != snRewritten {
			t.Errorf("events.k8s.io/v1 note %q, want %q", ev.Note, snRewritten)
		}
	})

	t.Run("EventSeriesUpdateIsStoredRewritten", func(t *testing.T) {
		// client-go's correlator updates a repeated event in place, with
		// a new message and count.
		ev := snCoreEvent(ctx, t, "kustomize-controller", "web", snFinished)
		ev.Message = "Reconciliation finished in 900ms, next run in 10m0s"
		ev.Count = 2
		if err := env.Client.Update(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), ev); err != nil {
			t.Fatal(err)
		}
		if want := "Reconciliation finished in 900ms (suspended: no further runs until resumed)"; ev.Message != want {
			t.Errorf("updated message %q, want %q", ev.Message, want)
		}
	})

	t.Run("EventFromAnotherComponentIsStoredAsWrittenWithoutReachingSteward", func(t *testing.T) {
		calls, excluded := pathCalls(t, snEventsPath), celExclusions(ctx, t, snEventsHook)
		if ev := snCoreEvent(ctx, t, "my-operator", "web", snFinished); ev.Message != snFinished {
			t.Errorf("stored message %q, want it as written", ev.Message)
		}
		if ev := snEventsV1(ctx, t, "my-operator", "web", snFinished); ev.Note != snFinished {
			t.Errorf("stored note %q, want it as written", ev.Note)
		}
		if ev := snCoreEvent(ctx, t, "kustomize-controller", "web", "Health check passed in 2s"); ev.Message != "Health check passed in 2s" {
			t.Errorf("stored message %q, want it as written", ev.Message)
		}
		if after := pathCalls(t, snEventsPath); after != calls {
			t.Errorf("%s was called %v times; these events must never reach Steward", snEventsPath, after-calls)
		}
		if after := celExclusions(ctx, t, snEventsHook); after < excluded+3 {
			t.Errorf("the API server's match-condition exclusions for %s grew by %v, want 3", snEventsHook, after-excluded)
		}
	})

	t.Run("EventAboutObjectNotSuspendedIsStoredAsWritten", func(t *testing.T) {
		// The matchConditions cannot know which objects are suspended, so
		// this event reaches Steward, once, and is left untouched.
		calls := pathCalls(t, snEventsPath)
		if ev := snCoreEvent(ctx, t, "kustomize-controller", "api", snFinished); ev.Message != snFinished {
			t.Errorf("stored message %q, want it as written", ev.Message)
		}
		if after := pathCalls(t, snEventsPath); after != calls+1 {
			t.Errorf("%s was called %v times, want once", snEventsPath, after-calls)
		}
	})

	t.Run("ResumingRemovesTheRecord", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", snNS, "patch", "kustomization", "web", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		if err != nil {
			t.Fatalf("resuming: %v", err)
		}
		if strings.Contains(stderr, "suspendnotice") {
			t.Errorf("no warning on resume, got:\n%s", stderr)
		}
		a := snGet(ctx, t, "web").GetAnnotations()
		if _, ok := a[snSuspendedBy]; ok {
			t.Errorf("%s is still set after resume: %v", snSuspendedBy, a)
		}
		if _, ok := a[snSuspendedAt]; ok {
			t.Errorf("%s is still set after resume: %v", snSuspendedAt, a)
		}
		harness.Eventually(t, 20*time.Second, func() error {
			if ev := snCoreEvent(ctx, t, "kustomize-controller", "web", snFinished); ev.Message != snFinished {
				return fmt.Errorf("after resume the stored message is %q, want it as written", ev.Message)
			}
			return nil
		})
	})

	t.Run("CreatingSuspendedHelmReleaseWarnsWithItsResumeCommand", func(t *testing.T) {
		manifest := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: flux-suspend
spec:
  interval: 10m
  suspend: true
  chart:
    spec:
      chart: podinfo
      sourceRef:
        kind: HelmRepository
        name: podinfo
`
		_, stderr, err := env.Kubectl(ctx, manifest, "--as", "jane", "apply", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		want := "Warning: suspendnotice: HelmRelease flux-suspend/podinfo is suspended and will not reconcile until resumed: flux resume helmrelease podinfo -n flux-suspend"
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's warnings:\n%s\nwant:\n%s", stderr, want)
		}
		out, _, err := env.Kubectl(ctx, "", "-n", snNS, "get", "helmrelease", "podinfo", "-o", "jsonpath={.metadata.annotations.steward\\.dev/suspended-by}")
		if err != nil || out != "jane" {
			t.Errorf("suspended-by = %q (%v), want jane", out, err)
		}
	})

	t.Run("ServerSideReApplyKeepsTheRecord", func(t *testing.T) {
		// A GitOps tool re-applies the same suspended manifest on every
		// sync; the record written on the first apply must survive.
		manifest := `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: from-git
  namespace: flux-suspend
spec:
  interval: 10m
  path: ./apps
  prune: true
  suspend: true
  sourceRef:
    kind: GitRepository
    name: apps
`
		for i := range 2 {
			if _, _, err := env.Kubectl(ctx, manifest, "--as", snController, "apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-"); err != nil {
				t.Fatalf("apply %d: %v", i+1, err)
			}
		}
		a := snGet(ctx, t, "from-git").GetAnnotations()
		if a[snSuspendedBy] != snController || a[snSuspendedAt] == "" {
			t.Errorf("after two applies the record is %v, want it suspended by %s", a, snController)
		}
	})

	t.Run("ObjectsWithMissingFieldsNeverFailTheMatchConditions", func(t *testing.T) {
		// Both webhooks fail open, so an erroring condition would show
		// only in the API server's metrics.
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", snNS, "label", "kustomization", "bare", "a=b"); err != nil {
			t.Fatal(err)
		}
		// Flux's schema lets a Kustomization be stored without a spec but
		// refuses a spec without its required fields: the patch passes
		// suspendnotice (which runs first) and is refused by the schema.
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", snNS, "patch", "kustomization", "bare", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
		if err == nil || !strings.Contains(err.Error(), "spec.sourceRef: Required value") {
			t.Fatalf("suspending a Kustomization without a spec: %v; want the schema's refusal", err)
		}
		c, err := env.As(snController)
		if err != nil {
			t.Fatal(err)
		}
		bare := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: snEventName("bare"), Namespace: snNS}, InvolvedObject: snRef("bare")}
		if err := c.Create(ctx, bare); err != nil {
			t.Fatal(err)
		}
		if after := snErrors(ctx, t); after != errorsBefore {
			t.Errorf("the API server failed to evaluate suspendnotice's matchConditions %v times", after-errorsBefore)
		}
	})
}

// TestSuspendNoticeWatchesFluxKindsInstalledLater proves that a Flux CRD
// installed while Steward runs neither makes it unready nor stays unseen:
// the CRD's creation makes Steward ask discovery again, its informer starts
// as soon as the CRD is served, and from then on its objects' events are
// rewritten too.
func TestSuspendNoticeWatchesFluxKindsInstalledLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	ns := "flux-later"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	snInstallCRD(ctx, t, "source.toolkit.fluxcd.io", "OCIRepository", "ocirepositories", snCRDVersion("v1", true, true))
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "OCIRepository",
		"metadata":   map[string]any{"name": "podinfo", "namespace": ns},
		"spec":       map[string]any{"interval": "5m", "url": "oci://ghcr.io/stefanprodan/manifests/podinfo"},
	}}
	harness.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, repo) })

	// Suspending needs no cache: the record and warning come at once.
	_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", ns, "patch", "ocirepository", "podinfo", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Warning: suspendnotice: OCIRepository flux-later/podinfo is suspended and will not reconcile until resumed: flux resume source oci podinfo -n flux-later"; !strings.Contains(stderr, want) {
		t.Errorf("kubectl's warnings:\n%s\nwant:\n%s", stderr, want)
	}

	snEventuallyRewritten(ctx, t, "source-controller",
		corev1.ObjectReference{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "OCIRepository", Name: "podinfo", Namespace: ns},
		"artifact up-to-date with remote revision: 'latest@sha256:0a1b', next run in 5m0s",
		"artifact up-to-date with remote revision: 'latest@sha256:0a1b' (suspended: no further runs until resumed)")
}
