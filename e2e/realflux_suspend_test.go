package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// realSuspendName names the repository, GitRepository and Kustomization of
// TestRealFluxSuspendedKustomization, and the namespace it applies to.
const realSuspendName = "realflux-suspend"

// realSuspendConfigMap is the repository's one object.
func realSuspendConfigMap(color string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + realSuspendName + `}
data: {color: ` + color + `}
`
}

// kustomizeEvents returns the Events kustomize-controller recorded about
// Kustomization name in harness.FluxNamespace, oldest first.
func kustomizeEvents(ctx context.Context, t *testing.T, name string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(harness.FluxNamespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "Kustomization" && ev.InvolvedObject.Name == name &&
			(ev.Source.Component == "kustomize-controller" || ev.ReportingController == "kustomize-controller") {
			out = append(out, ev)
		}
	}
	return out
}

// describeEvent is an Event's fields that suspendnotice's event webhook
// reads, as the controller wrote them.
func describeEvent(ev corev1.Event) string {
	return fmt.Sprintf("%s %s/%s source.component=%q reportingComponent=%q involvedObject=%s %s type=%s reason=%s count=%d message=%q",
		ev.Name, ev.Namespace, ev.InvolvedObject.Name, ev.Source.Component, ev.ReportingController, ev.InvolvedObject.APIVersion, ev.InvolvedObject.Kind,
		ev.Type, ev.Reason, ev.Count, ev.Message)
}

// eventTime is when ev last happened: its lastTimestamp, else its
// eventTime, else when it was stored.
func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// nextRunEvents are the events of evs that announce a next run.
func nextRunEvents(evs []corev1.Event) []corev1.Event {
	var out []corev1.Event
	for _, ev := range evs {
		if strings.Contains(ev.Message, "next run in") || strings.Contains(ev.Message, "suspended: no further runs") {
			out = append(out, ev)
		}
	}
	return out
}

// TestRealFluxSuspendedKustomization suspends and resumes a Kustomization
// that Flux's real kustomize-controller (v1.9.6) reconciles, with
// Steward's rendered webhooks registered. Suspending through kubectl is
// warned about and recorded on the object (suspendnotice). While
// suspended, kustomize-controller applies nothing, not even a newer commit
// it is asked to reconcile, and records no Event at all about the
// Kustomization: since Flux 2.6 no "next run in" event is emitted for a
// suspended object, so Steward's record, warning and audit report are
// what shows the suspension, and its event rewrite (for Flux releases
// before 2.6) has nothing to correct. Its "Reconciliation finished ...,
// next run in ..." events before the suspension and after the resume
// reach Steward and are stored as written. Resuming removes the record,
// and the commit is applied. None of the controllers' writes is refused.
func TestRealFluxSuspendedKustomization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	skipWithoutFlux(t, harness.FluxOptions{})
	callsAtStart := pathCalls(t, snEventsPath)
	rf := startRealFlux(ctx, t, realSuspendName, realSuspendName, map[string]string{
		"deploy/settings.yaml": realSuspendConfigMap("blue"),
	}, nil, harness.FluxOptions{})
	flux, source, kustomization := rf.Flux, rf.Source, rf.Kustomization
	wantApplied(t, rf.Applied, rf.Rev)
	settingsColor := func() string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: realSuspendName, Name: "settings"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["color"]
	}
	kubectlSuspend := func(suspend bool) string {
		t.Helper()
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "-n", harness.FluxNamespace, "patch", "kustomization", realSuspendName,
			"--type=merge", "-p", fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend))
		if err != nil {
			t.Fatalf("suspend=%t: %v: %s", suspend, err, stderr)
		}
		return stderr
	}

	t.Run("TheEventOfAReconcileIsStoredAsWritten", func(t *testing.T) {
		var evs []corev1.Event
		harness.Eventually(t, 30*time.Second, func() error {
			if evs = nextRunEvents(kustomizeEvents(ctx, t, realSuspendName)); len(evs) == 0 {
				return fmt.Errorf("kustomize-controller has recorded no next-run event about the Kustomization: %v", kustomizeEvents(ctx, t, realSuspendName))
			}
			return nil
		})
		for _, ev := range evs {
			t.Logf("kustomize-controller's event: %s", describeEvent(ev))
			if !strings.Contains(ev.Message, ", next run in 1m0s") {
				t.Errorf("the event of a Kustomization that is not suspended is not stored as written: %s", describeEvent(ev))
			}
		}
		if calls := pathCalls(t, snEventsPath) - callsAtStart; calls == 0 {
			t.Errorf("no event reached suspendnotice's event webhook: its match conditions let kustomize-controller's real events by")
		}
	})

	var record map[string]string
	t.Run("SuspendingIsWarnedAndRecorded", func(t *testing.T) {
		stderr := kubectlSuspend(true)
		want := "Warning: suspendnotice: Kustomization " + harness.FluxNamespace + "/" + realSuspendName +
			" is suspended and will not reconcile until resumed: flux resume kustomization " + realSuspendName + " -n " + harness.FluxNamespace
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's stderr:\n%s\nwant the warning:\n%s", stderr, want)
		}
		cur := fluxGet(ctx, t, kustomization)
		record = suspensionRecord(cur)
		if record[snSuspendedBy] != "jane" || record[snSuspendedAt] == "" {
			t.Errorf("the suspension record is %v, want %s=jane and %s", record, snSuspendedBy, snSuspendedAt)
		}
	})

	var rev string
	t.Run("WhileSuspendedNothingIsAppliedAndNoEventRecorded", func(t *testing.T) {
		before := nextRunEvents(kustomizeEvents(ctx, t, realSuspendName))
		beforeCalls := pathCalls(t, snEventsPath)
		var err error
		rev, err = rf.Repo.Commit(ctx, "green", map[string]string{"deploy/settings.yaml": realSuspendConfigMap("green")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := flux.ForceReconcile(ctx, source); err != nil {
			t.Fatal(err)
		}
		// kustomize-controller handles the request (it records
		// lastHandledReconcileAt) without applying anything.
		handled, err := flux.ForceReconcile(ctx, kustomization)
		if err != nil {
			t.Fatal(err)
		}
		applied, _, _ := unstructured.NestedString(handled.Object, "status", "lastAppliedRevision")
		if applied != "main@sha1:"+rf.Rev {
			t.Errorf("the suspended Kustomization's lastAppliedRevision is %q, want the first commit's main@sha1:%s", applied, rf.Rev)
		}
		t.Logf("the suspended Kustomization after a requested reconcile: lastAppliedRevision %s, %s", applied, harness.FluxReady(handled))
		// Its interval is a minute: long enough for a periodic run to
		// show, were one scheduled.
		time.Sleep(15 * time.Second)
		if got := settingsColor(); got != "blue" {
			t.Errorf("the suspended Kustomization applied color %q; want the first commit's blue", got)
		}
		after := nextRunEvents(kustomizeEvents(ctx, t, realSuspendName))
		if len(after) != len(before) {
			for _, ev := range after {
				t.Logf("event: %s", describeEvent(ev))
			}
			t.Errorf("kustomize-controller recorded next-run events about the suspended Kustomization (%d before, %d after)", len(before), len(after))
		}
		for _, ev := range after {
			for _, b := range before {
				if ev.Name == b.Name && ev.Count != b.Count {
					t.Errorf("kustomize-controller repeated an event about the suspended Kustomization: %s", describeEvent(ev))
				}
			}
		}
		if !strings.Contains(flux.Log("kustomize-controller"), "Reconciliation is suspended for this object") {
			t.Error(`kustomize-controller's log does not say "Reconciliation is suspended for this object"`)
		}
		t.Logf("suspendnotice's event webhook was called %v times while the Kustomization was suspended", pathCalls(t, snEventsPath)-beforeCalls)
		if got := suspensionRecord(fluxGet(ctx, t, kustomization)); got[snSuspendedBy] != record[snSuspendedBy] || got[snSuspendedAt] != record[snSuspendedAt] {
			t.Errorf("kustomize-controller's writes changed the suspension record: %v, want %v", got, record)
		}
	})

	t.Run("ResumingRemovesTheRecordAndApplies", func(t *testing.T) {
		if rev == "" {
			t.Skip("no commit was made while suspended")
		}
		resumed := time.Now()
		if stderr := kubectlSuspend(false); strings.Contains(stderr, "suspendnotice") {
			t.Errorf("resuming was warned about:\n%s", stderr)
		}
		if got := suspensionRecord(fluxGet(ctx, t, kustomization)); len(got) != 0 {
			t.Errorf("the resumed Kustomization still carries %v", got)
		}
		// Resuming changes the generation: kustomize-controller
		// reconciles and applies the newest commit.
		ready, err := flux.WaitFluxReady(ctx, kustomization, harness.FluxReconcileTimeout)
		if err != nil {
			t.Fatal(err)
		}
		wantApplied(t, ready, rev)
		if got := settingsColor(); got != "green" {
			t.Errorf("the resumed Kustomization left color %q; want green", got)
		}
		var fresh []corev1.Event
		harness.Eventually(t, 30*time.Second, func() error {
			fresh = nil
			for _, ev := range nextRunEvents(kustomizeEvents(ctx, t, realSuspendName)) {
				if !eventTime(ev).Before(resumed.Truncate(time.Second)) {
					fresh = append(fresh, ev)
				}
			}
			if len(fresh) == 0 {
				return fmt.Errorf("no next-run event since the resume")
			}
			return nil
		})
		for _, ev := range fresh {
			t.Logf("kustomize-controller's event after the resume: %s", describeEvent(ev))
			if !strings.Contains(ev.Message, ", next run in 1m0s") {
				t.Errorf("the event of the resumed Kustomization is not stored as written: %s", describeEvent(ev))
			}
		}
	})

	t.Run("NoWriteOfFluxIsRefused", func(t *testing.T) {
		kc := harness.FluxControllerUser("kustomize-controller")
		wantWritesAllowed(t, env, "Flux's controllers", func(ev harness.AuditEvent) bool {
			return strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+harness.FluxNamespace+":") &&
				(ev.ObjectRef.Namespace == realSuspendName || ev.ObjectRef.Namespace == harness.FluxNamespace && ev.ObjectRef.Name == realSuspendName)
		}, []string{
			"patch configmaps settings by " + kc,
			"patch kustomizations " + realSuspendName + " by " + kc,
		})
	})
}

// fluxGet reads obj (a Flux object, by its apiVersion, kind, namespace and
// name) as it is stored.
func fluxGet(ctx context.Context, t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// suspensionRecord is suspendnotice's annotations on obj.
func suspensionRecord(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, k := range []string{snSuspendedBy, snSuspendedAt} {
		if v, ok := obj.GetAnnotations()[k]; ok {
			out[k] = v
		}
	}
	return out
}
