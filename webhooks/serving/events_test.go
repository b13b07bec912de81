package serving

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// recorded is one Event a fakeRecorder was asked for.
type recorded struct {
	Controller string
	Regarding  corev1.ObjectReference
	Type       string
	Reason     string
	Action     string
	Note       string
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []recorded
}

func (f *fakeRecorder) forController(controller string) EventRecorder {
	return recorderFunc(func(regarding runtime.Object, eventtype, reason, action, note string, args ...any) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, recorded{controller, *regarding.(*corev1.ObjectReference), eventtype, reason, action, fmt.Sprintf(note, args...)})
	})
}

type recorderFunc func(regarding runtime.Object, eventtype, reason, action, note string, args ...any)

func (f recorderFunc) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	f(regarding, eventtype, reason, action, note, args...)
}

// drain records every queued Event synchronously, as Start would.
func (d *DenialEvents) drain() {
	for {
		select {
		case e := <-d.queue:
			e.recorder.Eventf(e.regarding, nil, corev1.EventTypeWarning, EventReason, e.action, "%s", e.note)
		default:
			return
		}
	}
}

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

const kustomizeController = "system:serviceaccount:flux-system:kustomize-controller"

func deployment(uid string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "web", "namespace": "apps", "uid": uid}}
}

// denyingRule refuses everything with msg.
type denyingRule struct{ msg string }

func (r denyingRule) Handle(context.Context, *rule.Request) admission.Response {
	return admission.Denied(r.msg)
}
func (denyingRule) Spec() rule.Spec { return rule.Spec{Name: "fleetguard", Type: rule.Validating} }

// TestDenialEventsRecordOnlyStandingRefusalsOfServiceAccounts: through
// Wrap, only an enforced denial of a service account's write records an
// Event, on the object (uid included when it exists), and nothing else
// does: people, exempt users, break-glass, warn and audit mode.
func TestDenialEventsRecordOnlyStandingRefusalsOfServiceAccounts(t *testing.T) {
	update := admissiontest.Update(deploymentsGVR, "Deployment", deployment("u-1"), deployment("u-1"))
	// The API server gives a created object its uid before admission.
	create := admissiontest.Create(deploymentsGVR, "Deployment", deployment("u-never-stored"))
	web := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "web"}
	withUID := web
	withUID.UID = "u-1"
	// refused is the Event fleetguard records for what kustomize-controller was refused.
	refused := func(regarding corev1.ObjectReference, action, what string) []recorded {
		return []recorded{{
			Controller: "steward.dev/fleetguard", Regarding: regarding, Type: "Warning", Reason: "StewardDenied", Action: action,
			Note: "Refused " + what + " by " + kustomizeController + ": fleetguard: no",
		}}
	}
	// agentUpdate is kustomize-controller's update of the Deployment.
	agentUpdate := func() *admissiontest.Request {
		return admissiontest.Update(deploymentsGVR, "Deployment", deployment("u-1"), deployment("u-1")).User(kustomizeController)
	}
	tests := map[string]struct {
		reason string
		opts   Options
		req    admission.Request
		want   []recorded
	}{
		"ServiceAccountRefusedUpdate": {
			reason: "a GitOps agent's refused update is recorded on the object, with its uid",
			opts:   Options{Mode: rule.Enforce},
			req:    update.User(kustomizeController, "system:serviceaccounts", "system:serviceaccounts:flux-system").Build(),
			want:   refused(withUID, "UPDATE", "UPDATE"),
		},
		"ServiceAccountRefusedCreate": {
			reason: "a refused create names the object that does not exist yet, without a uid",
			opts:   Options{Mode: rule.Enforce},
			req:    create.User(kustomizeController).Build(),
			want:   refused(web, "CREATE", "CREATE"),
		},
		"DryRun": {
			reason: "a dry run changes nothing, as the webhooks' sideEffects None promise; its answer tells the agent",
			opts:   Options{Mode: rule.Enforce},
			req:    agentUpdate().DryRun().Build(),
		},
		"Person": {
			reason: "a person reads the denial in the terminal",
			opts:   Options{Mode: rule.Enforce},
			req:    admissiontest.Update(deploymentsGVR, "Deployment", deployment("u-1"), deployment("u-1")).User("jane", "system:authenticated").Build(),
		},
		"LookalikeUser": {
			reason: "only the exact system:serviceaccount:<ns>:<name> form is a service account",
			opts:   Options{Mode: rule.Enforce},
			req:    admissiontest.Update(deploymentsGVR, "Deployment", deployment("u-1"), deployment("u-1")).User("system:serviceaccount:flux-system").Build(),
		},
		"ExemptServiceAccount": {
			reason: "an exempt writer is allowed, so nothing was refused",
			opts:   Options{Mode: rule.Enforce, ExemptUsers: []string{kustomizeController}},
			req:    agentUpdate().Build(),
		},
		"BreakGlass": {
			reason: "break-glass is allowed, so nothing was refused",
			opts:   Options{Mode: rule.Enforce, BreakGlassGroup: "ops"},
			req:    admissiontest.Update(deploymentsGVR, "Deployment", deployment("u-1"), deployment("u-1")).User(kustomizeController, "ops").Build(),
		},
		"WarnMode": {
			reason: "warn mode allows the write",
			opts:   Options{Mode: rule.Warn},
			req:    agentUpdate().Build(),
		},
		"AuditMode": {
			reason: "audit mode allows the write silently",
			opts:   Options{Mode: rule.Audit},
			req:    agentUpdate().Build(),
		},
		"Scale": {
			reason: "a Scale is not the object, and the request does not carry the object's kind",
			opts:   Options{Mode: rule.Enforce},
			req:    admissiontest.Update(deploymentsGVR, "Scale", deployment("u-1"), deployment("u-1")).User(kustomizeController).SubResource("scale").Build(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fake := &fakeRecorder{}
			events := NewDenialEvents(fake.forController)
			tc.opts.Events = events
			Wrap(denyingRule{msg: "fleetguard: no"}, rule.Webhook{}, tc.opts).Handle(context.Background(), tc.req)
			events.drain()
			if diff := cmp.Diff(tc.want, fake.events); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestDenialEventsCooldown: a writer retrying every few seconds gets one
// Event per object and rule per cooldown; other objects and rules are not
// held back, and after the cooldown the next refusal is recorded.
func TestDenialEventsCooldown(t *testing.T) {
	fake := &fakeRecorder{}
	events := NewDenialEvents(fake.forController)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events.now = func() time.Time { return now }
	fleet, claims := events.forRule("fleetguard"), events.forRule("claimguard")
	req := func(name string) *rule.Request {
		obj := map[string]any{"metadata": map[string]any{"name": name, "namespace": "apps"}}
		return rule.NewRequest(admissiontest.Update(deploymentsGVR, "Deployment", obj, obj).User(kustomizeController).Build())
	}
	for range 10 {
		fleet.denied(req("web"), "no")
		now = now.Add(5 * time.Second)
	}
	fleet.denied(req("api"), "no")
	claims.denied(req("web"), "no")
	events.drain()
	if len(fake.events) != 3 {
		t.Fatalf("recorded %d Events for 10 refusals of one object and one each of another object and rule; want 3: %+v", len(fake.events), fake.events)
	}
	now = now.Add(EventCooldown)
	fleet.denied(req("web"), "no")
	events.drain()
	if len(fake.events) != 4 {
		t.Errorf("after the cooldown the refusal is recorded again; got %d Events, want 4", len(fake.events))
	}
}

// TestDenialEventsAreBounded: a writer refused on ever new objects can
// make Steward remember no more than the cooldown's capacity, send no
// more than the rate limit allows, and queue no more than the queue holds;
// the request path never waits.
func TestDenialEventsAreBounded(t *testing.T) {
	fake := &fakeRecorder{}
	events := NewDenialEvents(fake.forController)
	fleet := events.forRule("fleetguard")
	req := func(i int) *rule.Request {
		obj := map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("web-%d", i), "namespace": "apps"}}
		return rule.NewRequest(admissiontest.Update(deploymentsGVR, "Deployment", obj, obj).User(kustomizeController).Build())
	}

	// Unlimited rate, nothing draining: the queue fills and the rest drop.
	events.limiter = flowcontrol.NewFakeAlwaysRateLimiter()
	start := time.Now()
	for i := range eventQueue * 3 {
		fleet.denied(req(i), "no")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusals with a full queue took %v; they must never wait", d)
	}
	if got := len(events.queue); got != eventQueue {
		t.Errorf("queue holds %d Events, want its capacity %d", got, eventQueue)
	}
	events.drain()

	// Draining as it goes, many objects: the cooldown forgets the oldest.
	for i := range eventCooldownKeys * 2 {
		fleet.denied(req(i), "no")
		events.drain()
	}
	if got := events.cooldown.Len(); got != eventCooldownKeys {
		t.Errorf("the cooldown remembers %d objects, want at most %d", got, eventCooldownKeys)
	}

	// The real limiter: a burst, then nothing more right away.
	fake.events = nil
	events.limiter = flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst)
	for i := range 1000 {
		fleet.denied(req(100000+i), "no")
		events.drain()
	}
	if got := len(fake.events); got < eventBurst || got > eventBurst+2 {
		t.Errorf("1000 refusals at once recorded %d Events; want about the burst, %d", got, eventBurst)
	}
}

func TestTruncateNote(t *testing.T) {
	long := strings.Repeat("ä", MaxEventNote) // 2 bytes each
	got := TruncateNote(long)
	if len(got) > MaxEventNote || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("a long note is cut to %d bytes (valid UTF-8: %v), want at most %d ending in …", len(got), utf8.ValidString(got), MaxEventNote)
	}
	exact := strings.Repeat("a", MaxEventNote)
	if TruncateNote(exact) != exact {
		t.Error("a note at the limit is cut")
	}
}
