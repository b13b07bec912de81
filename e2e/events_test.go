package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
	"github.com/stewardhq/steward/webhooks/serving"
)

// kustomizeController is Flux's kustomize-controller as the API server
// authenticates it: not one of fleetguard's exempt identities.
const kustomizeController = "system:serviceaccount:flux-system:kustomize-controller"

var kustomizeControllerGroups = []string{"system:serviceaccounts", "system:serviceaccounts:flux-system", "system:authenticated"}

// denialEvents lists Steward's Events in namespace about the object name.
func denialEvents(ctx context.Context, namespace, name string) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := env.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == serving.EventReason {
			out = append(out, e)
		}
	}
	return out, nil
}

// oneDenialEvent waits for exactly one Event about name and returns it.
func oneDenialEvent(t *testing.T, ctx context.Context, namespace, name string) eventsv1.Event {
	t.Helper()
	var got []eventsv1.Event
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = denialEvents(ctx, namespace, name); err != nil {
			return err
		}
		if len(got) != 1 {
			return fmt.Errorf("%d StewardDenied Events about %s/%s, want 1: %+v", len(got), namespace, name, got)
		}
		return nil
	})
	return got[0]
}

func droppedForCooldown(t *testing.T) float64 {
	t.Helper()
	n, err := env.Steward.Counter("steward_events_dropped_total", map[string]string{"rule": "fleetguard", "reason": "cooldown"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDenialEvents proves, through the real API server, that a GitOps
// agent's refused write leaves a Warning Event on the object with the
// whole denial, that the API server accepts one about an object a refused
// create never made, that retries within the cooldown add none, and that
// a person's refusal records none.
func TestDenialEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
		t.Fatalf("starting steward: %v", err)
	}
	ns := testNamespace(t, ctx, "denial-events")
	agent, err := env.As(fleetAgentUser)
	if err != nil {
		t.Fatal(err)
	}
	// It writes under its field manager, as Fleet's agent does: its managedFields
	// entry says which fields are Git's.
	agent = client.WithFieldOwner(agent, "fleetagent")
	flux, err := env.As(kustomizeController, kustomizeControllerGroups...)
	if err != nil {
		t.Fatal(err)
	}
	jane, err := env.As("jane")
	if err != nil {
		t.Fatal(err)
	}
	meta := fleetMeta("")
	meta.Namespace = ns
	for _, name := range []string{"web", "api"} {
		if err := agent.Create(ctx, webDeployment(name, meta, 1)); err != nil {
			t.Fatalf("the Fleet agent deploys %s: %v", name, err)
		}
	}
	imageChange := func(c client.Client, name string) error {
		return editDeployment(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, setImage("ghcr.io/example/web:9.9.9"))
	}

	t.Run("AgentsRefusedUpdateIsAnEventOnTheObject", func(t *testing.T) {
		// A service account's write goes to the entry for service accounts.
		err := imageChange(flux, "web")
		if err == nil || !strings.Contains(err.Error(), fleetguardAccountsHook) {
			t.Fatalf("kustomize-controller's edit of a Fleet-managed Deployment: %v; want fleetguard's denial", err)
		}
		denial := err.Error()[strings.Index(err.Error(), fleetguardAccountsHook)+len(fleetguardAccountsHook):]
		e := oneDenialEvent(t, ctx, ns, "web")
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		want := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", UID: d.UID}
		if e.Regarding != want {
			t.Errorf("regarding = %+v, want %+v", e.Regarding, want)
		}
		if e.Type != corev1.EventTypeWarning || e.Action != "UPDATE" || e.ReportingController != "steward.dev/fleetguard" {
			t.Errorf("type %q, action %q, reporting controller %q; want Warning, UPDATE, steward.dev/fleetguard", e.Type, e.Action, e.ReportingController)
		}
		if wantNote := "Refused UPDATE by " + kustomizeController + ": " + denial; e.Note != wantNote {
			t.Errorf("note:\n%s\nwant:\n%s", e.Note, wantNote)
		}
	})

	t.Run("RetriesWithinTheCooldownAddNone", func(t *testing.T) {
		before := droppedForCooldown(t)
		for range 3 {
			if err := imageChange(flux, "web"); err == nil {
				t.Fatal("a retried edit was allowed")
			}
		}
		// Each retry is dropped; one may count twice, as the API server
		// calls admission again when the update lost a race with the
		// deployment controller's status write.
		if got := droppedForCooldown(t) - before; got < 3 {
			t.Errorf("%v retries counted as within the cooldown, want at least 3", got)
		}
		time.Sleep(2 * time.Second)
		e := oneDenialEvent(t, ctx, ns, "web")
		if e.Series != nil {
			t.Errorf("retries within the cooldown bumped the Event's series: %+v", e.Series)
		}
	})

	t.Run("RefusedCreateIsAnEventWithoutUID", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: fleetMeta("settings")}
		cm.Namespace = ns
		if err := flux.Create(ctx, cm); err == nil || !strings.Contains(err.Error(), fleetguardAccountsHook) {
			t.Fatalf("kustomize-controller creating a ConfigMap with Fleet's keys: %v; want fleetguard's denial", err)
		}
		e := oneDenialEvent(t, ctx, ns, "settings")
		want := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings"}
		if e.Regarding != want || e.Action != "CREATE" {
			t.Errorf("regarding %+v, action %q; want %+v, CREATE", e.Regarding, e.Action, want)
		}
	})

	t.Run("PersonsRefusalRecordsNone", func(t *testing.T) {
		if err := imageChange(jane, "api"); err == nil || !strings.Contains(err.Error(), fleetguardHook) {
			t.Fatalf("jane's edit: %v; want fleetguard's denial", err)
		}
		// Events are recorded in order: once the agent's later refusal
		// shows, jane's would have too.
		if err := imageChange(flux, "api"); err == nil {
			t.Fatal("kustomize-controller's edit was allowed")
		}
		e := oneDenialEvent(t, ctx, ns, "api")
		if !strings.Contains(e.Note, kustomizeController) {
			t.Errorf("the one Event about api is not the agent's: %s", e.Note)
		}
	})
}
