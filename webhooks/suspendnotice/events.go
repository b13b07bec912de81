package suspendnotice

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// The announcements of a next run that Flux controllers put in their
// events, from the controllers' sources:
//   - kustomize-controller (internal/controller/kustomization_controller.go,
//     v1.9.0): "Reconciliation finished in 1.2s, next run in 10m0s";
//   - notification-controller, Receivers (internal/controller/receiver_controller.go,
//     v1.9.0): "Reconciliation finished, next run in 10m0s";
//   - image-reflector-controller, ImageRepositories
//     (internal/controller/imagerepository_controller.go, v1.2.0):
//     "successful scan, next scan in 5m0s", "tags did not change, next scan
//     in 5m0s", "no change in repository configuration since last scan,
//     next scan in 5m0s".
//
// The other controllers announce no next run in their events.
// announcements lists the verbs; the webhook's match condition is built
// from the same list, so the API server sends exactly these events.
var announcements = []string{"run", "scan"}

// suspendedNote replaces ", next <verb> in <duration>" in the events of a
// suspended object.
func suspendedNote(verb string) string {
	return " (suspended: no further " + verb + "s until resumed)"
}

// maxMessage is the longest event message the API server accepts
// (events.k8s.io/v1 note); a rewrite that would exceed it is not made.
const maxMessage = 1024

// nextRun matches ", next run in 10m0s" (or "next scan in") as Flux
// controllers write it (a Go duration's String). Only a duration is
// replaced: the replacement starts with " (", which no duration does, so
// rewriting is idempotent and a rewrite never forms a new match with the
// text before it.
var nextRun = regexp.MustCompile(`(?:,\s*|\s+)?next (` + strings.Join(announcements, "|") + `) in (?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|h|m|s))+`)

// objectRef is the involved object of an event: involvedObject in
// core/v1, regarding in events.k8s.io/v1.
type objectRef struct {
	APIVersion, Kind, Name, Namespace string
}

// event is what the rule needs of either kind of event.
type event struct {
	controllers []string
	about       objectRef
	text        string
	path        string // the JSON pointer of text
}

// decodeEvent reads a core/v1 or events.k8s.io/v1 Event through its
// view; fields of another type read as empty.
func decodeEvent(group string, v *object.View) (*event, error) {
	if !v.Present() {
		return nil, fmt.Errorf("the request carries no object")
	}
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("decoding the event: %w", err)
	}
	if group == "events.k8s.io" {
		return &event{controllers: []string{v.String("reportingController")}, about: refAt(v, "regarding"), text: v.String("note"), path: "/note"}, nil
	}
	return &event{controllers: []string{v.String("source", "component"), v.String("reportingComponent")}, about: refAt(v, "involvedObject"), text: v.String("message"), path: "/message"}, nil
}

// refAt reads the object reference at key.
func refAt(v *object.View, key string) objectRef {
	return objectRef{APIVersion: v.String(key, "apiVersion"), Kind: v.String(key, "kind"), Name: v.String(key, "name"), Namespace: v.String(key, "namespace")}
}

// rewrite returns the message of an event about a suspended object, and
// whether it differs.
func rewrite(text string) (string, bool) {
	out := nextRun.ReplaceAllStringFunc(text, func(m string) string {
		return suspendedNote(nextRun.FindStringSubmatch(m)[1])
	})
	if out == text || len(out) > maxMessage {
		return text, false
	}
	return out, true
}

// events rewrites the "next run in" or "next scan in" message of a Flux
// controller's event
// about a suspended object. Every other event passes untouched.
func (r *Rule) events(req *rule.Request) admission.Response {
	if req.Kind.Group != "" && req.Kind.Group != "events.k8s.io" {
		return admission.Allowed("")
	}
	ev, err := decodeEvent(req.Kind.Group, req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !slices.ContainsFunc(ev.controllers, func(c string) bool { return c != "" && slices.Contains(r.cfg.Controllers, c) }) {
		return admission.Allowed("")
	}
	text, changed := rewrite(ev.text)
	if !changed || r.suspensions == nil {
		return admission.Allowed("")
	}
	gv, err := schema.ParseGroupVersion(ev.about.APIVersion)
	if err != nil {
		return admission.Allowed("")
	}
	kind, ok := byGroupKind[schema.GroupKind{Group: gv.Group, Kind: ev.about.Kind}]
	if !ok {
		return admission.Allowed("")
	}
	ns := ev.about.Namespace
	if ns == "" {
		ns = req.Namespace
	}
	if !r.suspensions.Suspended(kind.groupResource(), ns, ev.about.Name) {
		return admission.Allowed("")
	}
	return admission.Patched(fmt.Sprintf("%s %s/%s is suspended", kind.Kind, ns, ev.about.Name),
		jsonpatch.NewOperation("replace", ev.path, text))
}
