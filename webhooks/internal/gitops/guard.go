package gitops

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Options configure a Guard.
type Options struct {
	// Rule is the guard's rule name, the first word of its denials.
	Rule string
	// Tool names the GitOps tool in messages ("Fleet", "Flux", "Argo
	// CD"); AgentName its writer ("the Fleet agent").
	Tool, AgentName string
	// Applier names who applies the tool's objects in the audit's drift
	// findings ("Changed since Flux last applied it"); AgentName when
	// empty.
	Applier string
	// Agent are the identities the tool writes as.
	Agent Identities
	// Ignored are the configured ignoredFields.
	Ignored []IgnoredFields
	// OptOut are the markers that take an object out of the tool's
	// management, and who may add them.
	OptOut OptOut
	// Records are where the tool records what it manages.
	Records []Record
	// BreakGlassGroup is the global break-glass group denials name.
	BreakGlassGroup string
}

// OptOut are a tool's opt-out markers: annotations the tool honours to
// leave an object (or some of its fields) alone. Git content may carry
// them; adding one in the cluster is a controlled write.
type OptOut struct {
	// Paths are the markers, as pointers into the object.
	Paths []object.Pointer
	// Groups may add them, each as a change of its own.
	Groups []string
}

// Guard judges writes to objects a GitOps tool deployed.
type Guard struct {
	msg      messages
	agent    Identities
	resolver Resolver
	skip     skipMap
	optOut   OptOut
	records  []Record
}

// New builds a Guard over one tool's resolver.
func New(o Options, r Resolver) *Guard {
	return &Guard{
		msg:      messages{rule: o.Rule, tool: o.Tool, agent: o.AgentName, applier: cmp.Or(o.Applier, o.AgentName), breakGlass: o.BreakGlassGroup},
		agent:    o.Agent,
		resolver: r,
		skip:     newSkipMap(o.Ignored),
		optOut:   o.OptOut,
		records:  o.Records,
	}
}

// Skip returns the paths an update of the given kind may change: the
// server-managed ones and the configured ignored fields.
func (g *Guard) Skip(gk schema.GroupKind) []object.Pointer { return g.skip.of(gk) }

// Trusted says whether a user's writes are allowed without question, and
// as whom. The webhooks' matchConditions keep these requests away from
// Steward; this is the same decision for requests that arrive anyway (an
// edited configuration, or a rule run offline).
func (g *Guard) Trusted(u authenticationv1.UserInfo) (string, bool) {
	switch {
	case g.agent.Has(u):
		return g.msg.agent, true
	case Kubernetes(u):
		return "a Kubernetes controller", true
	}
	return "", false
}

// Handle decides a write to an object or to a subresource that stores it,
// as if the guard were enforced.
func (g *Guard) Handle(ctx context.Context, req *rule.Request) admission.Response {
	for _, r := range g.records {
		if r.matches(req) {
			if resp := g.record(req, r); !resp.Allowed {
				return resp
			}
		}
	}
	switch req.SubResource {
	case "scale":
		if sr, ok := g.resolver.(ScaleResolver); ok {
			return g.scale(ctx, req, sr)
		}
		return admission.Allowed("")
	case "", "status", "ephemeralcontainers", "resize":
		// A write through a subresource stores the whole object it
		// carries, less what the subresource's strategy resets, so it is
		// judged as an update of that object: a status write may not strip
		// the tool's markers, add an owner or change labels any more than
		// an edit may.
	default:
		// The webhooks ask for no other subresource.
		return admission.Allowed("")
	}
	if who, ok := g.Trusted(req.UserInfo); ok {
		return admission.Allowed("written by " + who)
	}
	switch req.Operation {
	case admissionv1.Create:
		return g.create(ctx, req)
	case admissionv1.Update:
		return g.update(ctx, req)
	case admissionv1.Delete:
		return g.delete(ctx, req)
	}
	return admission.Allowed("")
}

// RefOf names the object of a request, as v holds it.
func RefOf(req *rule.Request, v *object.View) Ref {
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	name := v.Name()
	if name == "" {
		name = req.Name
	}
	ns := req.Namespace
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		// The API server sets a Namespace's own name as its request's
		// namespace; the object itself is cluster-scoped.
		ns = ""
	}
	return Ref{GroupVersionKind: gvk, Namespace: ns, Name: name, GenerateName: v.GenerateName()}
}

// claiming judges a write that gives an object the tool's markers: only
// the tool, or a writer of the owner the markers name, may.
func (g *Guard) claiming(ctx context.Context, req *rule.Request, ref Ref, v *object.View, c Claim, verb string) admission.Response {
	owners, err := g.resolver.Owners(ctx, ref, v)
	if err != nil {
		return admission.Errored(http.StatusServiceUnavailable, err)
	}
	if o, ok := writerOf(owners, req.UserInfo.Username); ok {
		return admission.Allowed("written by " + req.UserInfo.Username + ", which writes for " + o.Name)
	}
	return admission.Denied(g.msg.spoofing(ref, verb, c))
}

func (g *Guard) update(ctx context.Context, req *rule.Request) admission.Response {
	oldView, curView := req.OldView(), req.View()
	if err := oldView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, old object: %w", err))
	}
	if err := curView.Err(); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("update, new object: %w", err))
	}
	ref := RefOf(req, oldView)
	oc, nc := g.resolver.Claim(ref, oldView), g.resolver.Claim(RefOf(req, curView), curView)
	switch {
	case !oc.Claims && nc.Claims:
		return g.claiming(ctx, req, RefOf(req, curView), curView, nc, "would gain")
	case !oc.Claims:
		return admission.Allowed(oc.NotClaimed)
	}
	owners, resp, ok := g.managing(ctx, req, ref, oldView)
	if !ok {
		return resp
	}
	if keys := stripped(oc.Keys, nc.Keys); len(keys) > 0 {
		return admission.Denied(g.msg.stripping(ref, owners, keys))
	}
	if added := AddedOwners(oldView, curView); len(added) > 0 {
		return admission.Denied(g.msg.addingOwners(ref, owners, added))
	}
	// Clipped: the configured list is shared by concurrent requests.
	skip := append(slices.Clip(g.skip.of(ref.GroupKind())), controlPaths(ref.GroupKind())...)
	skip = append(skip[:len(skip):len(skip)], commonSkip(owners)...)
	c, refused := changes(oldView, curView, skip, owners)
	if refused != "" {
		return admission.Denied(g.msg.changedAs(ref, owners, refused))
	}
	if c.Total == 0 {
		return admission.Allowed(fmt.Sprintf("no change to fields %s deploys (status, metadata bookkeeping and ignored fields are not guarded)", g.msg.tool))
	}
	if g.optOutChanged(oldView, curView) {
		rest := object.Diff(oldView, curView, append(skip[:len(skip):len(skip)], g.optOut.Paths...), 1)
		if rest.Total == 0 { // only opt-out markers changed
			if intersects(g.optOut.Groups, req.UserInfo.Groups) {
				return admission.Allowed(fmt.Sprintf("opt-out %s set by %s, a member of an opt-out group", ChangeList(c), req.UserInfo.Username))
			}
			return admission.Denied(g.msg.optOutRefused(ref, owners, c, g.optOut.Groups))
		}
	}
	return admission.Denied(g.msg.changed(ref, owners, c))
}

// optOutChanged reports whether an update changes one of the tool's
// opt-out markers: a few keys compared, where finding what else changed
// takes a second diff, which most refused edits (that touch no marker)
// are spared.
func (g *Guard) optOutChanged(old, cur *object.View) bool {
	for _, p := range g.optOut.Paths {
		if !object.Equal(old, cur, p...) {
			return true
		}
	}
	return false
}

// managing returns the owners that manage the object v holds; when none
// does, or a writer of theirs writes, or their tool is paused or told to
// leave the object alone, it returns the answer instead.
func (g *Guard) managing(ctx context.Context, req *rule.Request, ref Ref, v *object.View) ([]Owner, admission.Response, bool) {
	owners, err := g.resolver.Owners(ctx, ref, v)
	if err != nil {
		return nil, admission.Errored(http.StatusServiceUnavailable, err), false
	}
	return g.judgeOwners(req, ref, owners)
}

// judgeOwners is managing once the owners are found.
func (g *Guard) judgeOwners(req *rule.Request, ref Ref, owners []Owner) ([]Owner, admission.Response, bool) {
	if o, ok := writerOf(owners, req.UserInfo.Username); ok {
		return nil, admission.Allowed("written by " + req.UserInfo.Username + ", which writes for " + o.Name), false
	}
	managing, why := managingOwners(owners)
	if len(managing) == 0 {
		return nil, admission.Allowed(strings.Join(why, "; ")), false
	}
	// A change persists only if no owner reverts it: an owner the object
	// opted out of, or a paused one, does not, but another owner may
	// still (kustomize-controller's reconcile: disabled means nothing to
	// helm-controller). Only the owners that revert are judged and named.
	var reverting []Owner
	optedOut, paused := "", ""
	for _, o := range managing {
		switch {
		case o.OptedOut != "":
			optedOut = cmp.Or(optedOut, o.OptedOut)
		case o.Paused != "":
			paused = cmp.Or(paused, o.Paused)
		default:
			reverting = append(reverting, o)
		}
	}
	switch {
	case len(reverting) > 0:
		return reverting, admission.Response{}, true
	case optedOut != "":
		return nil, admission.Allowed(optedOut), false
	}
	w := fmt.Sprintf("%s: %s is managed by %s, and %s: the change is allowed and recorded; it stays until the owner resumes.", g.msg.rule, ref, names(managing), paused)
	return nil, admission.Allowed(paused).WithWarnings(w), false
}

// commonSkip returns the paths every owner ignores: a change is let
// through only if no owner reverts it, so the paths one owner ignores
// and another does not stay guarded. A path one owner ignores under a
// path another ignores is ignored by both.
func commonSkip(owners []Owner) []object.Pointer {
	if len(owners) == 0 {
		return nil
	}
	common := owners[0].Skip
	for _, o := range owners[1:] {
		var both []object.Pointer
		for _, p := range common {
			if Skipped(p, o.Skip) {
				both = append(both, p)
			}
		}
		for _, p := range o.Skip {
			if Skipped(p, common) && !Skipped(p, both) {
				both = append(both, p)
			}
		}
		common = both
	}
	return common
}

// managingOwners are the owners whose record lists the object, and why
// the others do not.
func managingOwners(owners []Owner) (managing []Owner, why []string) {
	for _, o := range owners {
		if o.Manages {
			managing = append(managing, o)
		} else if o.Why != "" {
			why = append(why, o.Why)
		}
	}
	return managing, why
}

// stripped lists the keys old has and cur lacks.
func stripped(old, cur []string) []string {
	var keys []string
	for _, k := range old {
		if !slices.Contains(cur, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func writerOf(owners []Owner, user string) (Owner, bool) {
	for _, o := range owners {
		if slices.Contains(o.Writers, user) {
			return o, true
		}
	}
	return Owner{}, false
}

// ManagedBy is the first sentence of the guard's denials, for findings
// that speak of a managed object the same way.
func (g *Guard) ManagedBy(ref Ref, owners []Owner) string { return g.msg.managedBy(ref, owners) }
