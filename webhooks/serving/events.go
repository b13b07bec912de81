package serving

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/lru"
)

// Limits of DenialEvents. They bound what a writer retrying forever, or
// denied on ever new objects, can make Steward spend: memory (the cooldown
// cache and the queue are fixed in size) and API calls (the rate).
const (
	// EventCooldown is how long after recording an Event for an object and
	// rule no other is recorded for them. A GitOps agent retrying every few
	// seconds gets one Event per cooldown; the events library's own series
	// counting turns the next into a count on the same Event.
	EventCooldown = 5 * time.Minute
	// eventCooldownKeys is how many (rule, object) pairs the cooldown
	// remembers; the least recently denied is forgotten first.
	eventCooldownKeys = 4096
	// eventQPS and eventBurst bound the Events Steward sends the API server,
	// across all rules and objects.
	eventQPS   = 1
	eventBurst = 20
	// eventQueue is how many Events may wait for the recorder; more are
	// dropped, never waited for on the request path.
	eventQueue = 64
	// MaxEventNote is the API server's limit on an events.k8s.io/v1
	// Event's note, in bytes.
	MaxEventNote = 1024
)

// EventReason is the reason of every Event Steward records for a denial.
const EventReason = "StewardDenied"

// EventRecorder is the one method of client-go's events.EventRecorder
// that DenialEvents uses, so tests can record into a fake.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// DenialEvents records a Kubernetes Event on the object a service account
// was refused a write to, so a GitOps agent's refusal shows up in
// `kubectl describe` and in event-based alerting, not only in the agent's
// log. It never slows the answer to a request: the decision and the
// cooldown are a map lookup, and the Event is sent by Start's goroutine.
type DenialEvents struct {
	// recorder returns the recorder that reports as controller.
	recorder func(controller string) EventRecorder
	queue    chan pendingEvent
	now      func() time.Time

	mu       sync.Mutex
	cooldown *lru.Cache // "rule/group/kind/namespace/name" -> time.Time recorded
	limiter  flowcontrol.RateLimiter

	queued, dropped *prometheus.CounterVec
}

type pendingEvent struct {
	recorder  EventRecorder
	regarding *corev1.ObjectReference
	action    string
	note      string
}

// NewDenialEvents returns DenialEvents that send through recorder, which
// builds one recorder per reporting controller (a rule's "steward.dev/<rule>").
func NewDenialEvents(recorder func(controller string) EventRecorder) *DenialEvents {
	d := &DenialEvents{
		recorder: recorder,
		queue:    make(chan pendingEvent, eventQueue),
		now:      time.Now,
		cooldown: lru.New(eventCooldownKeys),
		limiter:  flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst),
	}
	d.queued, d.dropped = newEventMetrics()
	return d
}

// Start sends queued Events until ctx ends. It is a manager.Runnable.
func (d *DenialEvents) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-d.queue:
			// The recorder only hands the Event to the broadcaster, which
			// aggregates and sends it on its own goroutine.
			e.recorder.Eventf(e.regarding, nil, corev1.EventTypeWarning, EventReason, e.action, "%s", e.note)
		}
	}
}

func (d *DenialEvents) forRule(name string) *ruleEvents {
	if d == nil {
		return nil
	}
	return &ruleEvents{DenialEvents: d, rule: name, recorder: d.recorder("steward.dev/" + name)}
}

// newEventMetrics are the counters of one DenialEvents: the Events it
// handed to the recorder, and the refusals it recorded none for (within the
// cooldown of an earlier one, over the rate limit, or with the queue full).
func newEventMetrics() (queued, dropped *prometheus.CounterVec) {
	queued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_events_recorded_total",
		Help: "Kubernetes Events Steward recorded for service accounts' refused writes, by rule.",
	}, []string{"rule"})
	dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_events_dropped_total",
		Help: "Refusals of service accounts' writes Steward recorded no Event for, by rule and reason (cooldown, rate-limit, queue-full).",
	}, []string{"rule", "reason"})
	return queued, dropped
}

// Describe and Collect make DenialEvents a prometheus.Collector of its two
// counters, for the server to register with the registry it serves.
func (d *DenialEvents) Describe(ch chan<- *prometheus.Desc) {
	d.queued.Describe(ch)
	d.dropped.Describe(ch)
}

// Collect implements prometheus.Collector.
func (d *DenialEvents) Collect(ch chan<- prometheus.Metric) {
	d.queued.Collect(ch)
	d.dropped.Collect(ch)
}
