package serving

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Served is one rule as a configuration serves it: its mode, or, with a
// nil Rule, turned off.
type Served struct {
	Rule rule.Rule
	Mode rule.Mode
}

// Settings are what a configuration applies around every rule.
type Settings struct {
	ExemptUsers, ExemptGroups []string
	BreakGlassGroup           string
	// RecordEvents is whether denials of service accounts' writes are
	// recorded as Events.
	RecordEvents bool
}

// A Table answers every webhook path Steward serves. The paths are fixed
// at start-up, as the manifests register them; what answers at each path
// is swapped, all paths at once, when a reloaded configuration takes
// effect, so a request is judged wholly by the old configuration or wholly
// by the new one.
type Table struct {
	// webhooks are each rule's entries as registered at start-up.
	webhooks [][]rule.Webhook
	events   *DenialEvents
	metrics  *Metrics
	log      logr.Logger
	current  atomic.Pointer[handlers]
}

// handlers is one configuration's handler for each path.
type handlers map[string]judge

// NewTable serves rules (every rule of the list, in its order) with s.
// events is nil when Steward records no Events; metrics record every
// decision; log receives the decision lines.
func NewTable(rules []Served, s Settings, events *DenialEvents, metrics *Metrics, log logr.Logger) *Table {
	t := &Table{events: events, metrics: metrics, log: log}
	for _, r := range rules {
		t.webhooks = append(t.webhooks, r.Rule.Spec().Webhooks)
	}
	t.Swap(rules, s)
	return t
}

// Swap makes next (next[i] in place of the i-th rule served at start-up),
// with s, answer every path from the next request on. A rule turned off
// allows every request without judging it: its webhooks stay registered
// until the manifests are rendered again, and answering 404 there would
// refuse writes with failurePolicy Fail.
func (t *Table) Swap(next []Served, s Settings) {
	events := t.events
	if !s.RecordEvents {
		events = nil
	}
	out := handlers{}
	for i, r := range next {
		for _, wh := range t.webhooks[i] {
			if r.Rule == nil {
				out[wh.Path] = unjudged{}
				continue
			}
			out[wh.Path] = wrap(r.Rule, wh, Options{
				Mode:            r.Mode,
				ExemptUsers:     s.ExemptUsers,
				ExemptGroups:    s.ExemptGroups,
				BreakGlassGroup: s.BreakGlassGroup,
				Log:             t.log,
				Events:          events,
				Metrics:         t.metrics,
			})
		}
	}
	t.current.Store(&out)
}

// Handler answers at path with whichever configuration is current.
func (t *Table) Handler(path string) admission.Handler {
	return dispatch{t: t, path: path}
}

// HTTPOptions are what every webhook path's HTTP handler shares.
type HTTPOptions struct {
	// Limit is the memory budget for request bodies in flight; required.
	Limit *InflightLimit
	// Drain, once begun, makes every answer close its connection; nil:
	// no drain.
	Drain *Drain
	// Log receives the lines about unreadable requests.
	Log logr.Logger
}

// HTTP is the handler the webhook server registers at path: the request
// is charged to the memory budget, its body read within bodyReadTimeout
// and decoded (as serve does), and answered by the current configuration.
func (t *Table) HTTP(path string, o HTTPOptions) http.Handler {
	var h http.Handler = &server{table: t, path: path, log: o.Log}
	h = o.Limit.Wrap(withBodyDeadline(h, bodyReadTimeout))
	if o.Drain != nil {
		h = o.Drain.Wrap(h)
	}
	return h
}

// dispatch answers at a path with whichever configuration is current,
// for callers outside the server.
type dispatch struct {
	t    *Table
	path string
}

func (d dispatch) Handle(ctx context.Context, req admission.Request) admission.Response {
	j, ok := (*d.t.current.Load())[d.path]
	if !ok {
		return admission.Errored(http.StatusNotFound, fmt.Errorf("no webhook of Steward's is registered at %s", d.path))
	}
	return j.judge(ctx, rule.NewRequest(req))
}

// unjudged answers for a rule turned off while Steward runs.
type unjudged struct{}

func (unjudged) judge(context.Context, *rule.Request) admission.Response {
	return admission.Allowed("")
}
