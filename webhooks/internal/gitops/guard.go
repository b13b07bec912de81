package gitops

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Settings are the guard's configured settings; Settings.Agent() is
	// not read, Agent is.
	Settings Settings
	// Agent are the identities the tool writes as: the agent's of
	// Settings, and for Argo CD its server's users where UI edits count
	// as its own.
	Agent rule.Identities
	// People are service accounts that write people's edits (argocd-server,
	// for its UI): judged as people, not as the cluster's machinery.
	People []string
	// OptOut are the markers that take an object out of the tool's
	// management, and who may add them.
	OptOut OptOut
	// Records are where the tool records what it manages.
	Records []Record
	// BreakGlassGroup is the global break-glass group denials name.
	BreakGlassGroup string
	// Markers are the paths the guard keys on (the tool's ownership keys
	// and whatever its webhook's selectors and conditions read): a change
	// of one, or of a path above one, counts as a change of a field Git
	// declares, whoever writes it and whatever managedFields say, since it
	// changes who manages the object. The opt-out markers are added.
	Markers []object.Pointer
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
	agent    rule.Identities
	resolver Resolver
	skip     skipMap
	optOut   OptOut
	records  []Record
	// undeclared is the undeclaredFields setting.
	undeclared Undeclared
	// markers are Options.Markers and the opt-out markers.
	markers []object.Pointer
	// people are Options.People.
	people []string
}

// New builds a Guard over one tool's resolver.
func New(o Options, r Resolver) *Guard {
	return &Guard{
		msg:        messages{rule: o.Rule, tool: o.Tool, agent: o.AgentName, applier: cmp.Or(o.Applier, o.AgentName), breakGlass: o.BreakGlassGroup},
		agent:      o.Agent,
		resolver:   r,
		skip:       newSkipMap(o.Settings.IgnoredFields),
		optOut:     o.OptOut,
		records:    o.Records,
		undeclared: cmp.Or(o.Settings.UndeclaredFields, UndeclaredRefuse),
		markers:    append(slices.Clip(o.Markers), o.OptOut.Paths...),
		people:     o.People,
	}
}

// Agent are the identities the tool writes as, which the guard's webhooks
// leave out.
func (g *Guard) Agent() rule.Identities { return g.agent }

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

// Ref names the object a request writes.
type Ref struct {
	schema.GroupVersionKind
	Namespace, Name string
	// GenerateName is the name's prefix when the name is still to be
	// generated (a create).
	GenerateName string
}

// String names the object the way denial messages do: "Kind ns/name", or
// "Kind name" for cluster-scoped objects; a name still to be generated is
// shown as its prefix followed by "*".
func (r Ref) String() string {
	var b strings.Builder
	r.write(&b)
	return b.String()
}

// write writes String's text to b.
func (r Ref) write(b *strings.Builder) {
	b.WriteString(r.Kind)
	b.WriteByte(' ')
	if r.Namespace != "" {
		b.WriteString(r.Namespace)
		b.WriteByte('/')
	}
	if r.Name == "" && r.GenerateName != "" {
		b.WriteString(r.GenerateName)
		b.WriteByte('*')
		return
	}
	b.WriteString(r.Name)
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
	// Clipped: the list is shared by concurrent requests.
	skip := append(slices.Clip(g.skip.edits(ref.GroupKind())), commonSkip(owners)...)
	all := object.Diff(oldView, curView, skip, maxFieldChanges)
	if all.Total > 0 && g.optOutChanged(oldView, curView) {
		rest := object.Diff(oldView, curView, append(skip[:len(skip):len(skip)], g.optOut.Paths...), 1)
		c := listed(all)
		if rest.Total == 0 { // only opt-out markers changed
			if (rule.Identities{Groups: g.optOut.Groups}).Has(req.UserInfo) {
				return admission.Allowed(fmt.Sprintf("opt-out %s set by %s, a member of an opt-out group", ChangeList(c), req.UserInfo.Username))
			}
			return admission.Denied(g.msg.optOutRefused(ref, owners, c, g.optOut.Groups))
		}
	}
	return g.fields(req, ref, owners, splitFields(oldView, curView, all, owners, g.markers, skip))
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
	// Filtered in place: managing is this request's own.
	reverting := managing[:0]
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

// AddedOwners lists the owner references the new object has and the old
// lacks. The garbage collector deletes an object once all its owners are
// gone, so an owner reference to an object the writer controls is a
// deferred delete that no DELETE request would show: the garbage
// collector's own delete is, rightly, never refused. Removing owners is
// not listed: it only keeps an object from being collected.
func AddedOwners(old, cur *object.View) []metav1.OwnerReference {
	if bytes.Equal(old.Field("metadata", "ownerReferences"), cur.Field("metadata", "ownerReferences")) {
		return nil // the common case: no owners, or the same ones, unread
	}
	before := old.OwnerReferences()
	var added []metav1.OwnerReference
	for _, n := range cur.OwnerReferences() {
		if !containsOwner(before, n) {
			added = append(added, n)
		}
	}
	return added
}

// containsOwner matches owner references by uid, which names one object
// for its whole life, or by kind and name where a uid is missing.
func containsOwner(refs []metav1.OwnerReference, r metav1.OwnerReference) bool {
	for _, o := range refs {
		if (r.UID != "" && o.UID == r.UID) || (r.UID == "" && o.UID == "" && o.Kind == r.Kind && o.Name == r.Name) {
			return true
		}
	}
	return false
}

// skipMap is, per group and kind, the paths an update may change: the
// server-managed ones plus the configured ignored fields, and the same
// with the kind's control writes, both built once so that no request
// copies them. Pointers that do not parse are left out; ValidateIgnored
// reports them first.
type skipMap map[schema.GroupKind]skipLists

// skipLists are one kind's paths of a skipMap.
type skipLists struct {
	// fields are the server-managed paths and the ignored fields.
	fields []object.Pointer
	// edits are fields and the kind's control writes (controlPaths): what
	// a person's update may change without being an edit.
	edits []object.Pointer
}

func newSkipMap(list []IgnoredFields) skipMap {
	m := skipMap{}
	for _, f := range list {
		gk := schema.GroupKind{Group: f.Group, Kind: f.Kind}
		fields := m[gk].fields
		if fields == nil {
			fields = slices.Clone(serverManaged)
		}
		for _, s := range f.Paths {
			if p, err := object.ParsePointer(s); err == nil && len(p) > 0 {
				fields = append(fields, p)
			}
		}
		m[gk] = skipLists{fields: slices.Clip(fields), edits: slices.Concat(fields, controlPaths(gk))}
	}
	return m
}

// of returns the paths an update of the given kind may change. The list
// is shared: append to a clipped copy.
func (m skipMap) of(gk schema.GroupKind) []object.Pointer {
	if s, ok := m[gk]; ok {
		return s.fields
	}
	return serverManaged
}

// edits returns of's paths and the kind's control writes, shared as of's
// are.
func (m skipMap) edits(gk schema.GroupKind) []object.Pointer {
	if s, ok := m[gk]; ok {
		return s.edits
	}
	return controlOf(gk).edits
}

// Skipped reports whether p is at or under one of skip.
func Skipped(p object.Pointer, skip []object.Pointer) bool {
	for _, s := range skip {
		if p.HasPrefix(s) {
			return true
		}
	}
	return false
}

// Control writes are how people steer GitOps tools through the tools' own
// objects: requesting a reconcile, suspending, refreshing or syncing. They
// change nothing the tools deploy, so no guard counts them as edits, even
// where the object is itself deployed from Git (a Kustomization its parent
// applies, an Application of an app of apps).
var (
	controlAnnotations = MustPointers(
		"/metadata/annotations/reconcile.fluxcd.io~1requestedAt",
		"/metadata/annotations/reconcile.fluxcd.io~1forceAt",
		"/metadata/annotations/reconcile.fluxcd.io~1resetAt",
		"/metadata/annotations/argocd.argoproj.io~1refresh",
	)
	// fluxControl adds spec.suspend (flux suspend, flux resume) on Flux's
	// kinds, and the record of who suspended, which Steward's suspendnotice
	// writes along with it.
	fluxControl = append(MustPointers(
		"/spec/suspend",
		"/metadata/annotations/steward.dev~1suspended-at",
		"/metadata/annotations/steward.dev~1suspended-by",
	), controlAnnotations...)
	// applicationControl adds an Application's sync operation (argocd app
	// sync) and its skip-reconcile annotation.
	applicationControl = append(MustPointers("/operation", "/metadata/annotations/argocd.argoproj.io~1skip-reconcile"), controlAnnotations...)
)

// controlPaths are the control writes of an object of the given kind.
func controlPaths(gk schema.GroupKind) []object.Pointer { return controlOf(gk).paths }

// controls are a family of kinds' control writes, and the paths an update
// of a kind without configured ignored fields may change (skipMap.edits).
type controls struct{ paths, edits []object.Pointer }

var (
	fluxControls        = controls{fluxControl, slices.Concat(serverManaged, fluxControl)}
	applicationControls = controls{applicationControl, slices.Concat(serverManaged, applicationControl)}
	otherControls       = controls{controlAnnotations, slices.Concat(serverManaged, controlAnnotations)}
)

// controlOf is the control writes of an object of the given kind.
func controlOf(gk schema.GroupKind) *controls {
	switch {
	case strings.HasSuffix(gk.Group, ".toolkit.fluxcd.io"):
		return &fluxControls
	case gk.Group == "argoproj.io" && gk.Kind == "Application":
		return &applicationControls
	}
	return &otherControls
}

// kubernetesControllers are Kubernetes' own identities whose writes to
// GitOps-managed objects are part of how the cluster works; refusing them
// would break garbage collection, namespace deletion or routine
// reconciliation, and none of them edits the desired state a GitOps tool
// deploys.
// They are excluded in the webhook's matchConditions, so a Steward outage
// never blocks them, and allowed again in the handler.
var kubernetesControllers = []string{
	// Deletes dependents of deleted owners and rewrites ownerReferences.
	"system:serviceaccount:kube-system:generic-garbage-collector",
	// Deletes everything in a namespace that is being deleted.
	"system:serviceaccount:kube-system:namespace-controller",
	// Writes the deployment.kubernetes.io/revision annotation on Deployments.
	"system:serviceaccount:kube-system:deployment-controller",
	// Copy a Service's labels, a GitOps tool's included, onto its Endpoints and
	// EndpointSlices, and create, update and delete those.
	"system:serviceaccount:kube-system:endpoint-controller",
	"system:serviceaccount:kube-system:endpointslice-controller",
	"system:serviceaccount:kube-system:endpointslicemirroring-controller",
	// Binds PersistentVolumeClaims and PersistentVolumes (spec.volumeName,
	// spec.claimRef, pv.kubernetes.io/* annotations).
	"system:serviceaccount:kube-system:persistent-volume-binder",
	// Deletes finished Jobs that set ttlSecondsAfterFinished.
	"system:serviceaccount:kube-system:ttl-after-finished-controller",
	// Fills in the rules of aggregated ClusterRoles (aggregationRule).
	"system:serviceaccount:kube-system:clusterrole-aggregation-controller",
	// The controller manager's own identity, used for every controller
	// when it runs without --use-service-account-credentials.
	"system:kube-controller-manager",
	// The API server's loopback identity for its internal writes.
	"system:apiserver",
}

// NodesGroup is the group of kubelets. A kubelet deletes the pods it has
// finished terminating and mirrors static pods; the NodeRestriction
// admission plugin already limits it to its own pods.
const NodesGroup = "system:nodes"

// Kubernetes reports whether u is one of Kubernetes' own controllers.
func Kubernetes(u authenticationv1.UserInfo) bool {
	return slices.Contains(kubernetesControllers, u.Username) || slices.Contains(u.Groups, NodesGroup)
}

// ListedPaths is how many changed paths a denial names before "and N
// more".
const ListedPaths = 5

// messages builds one guard's denials, all in one style: the rule, the
// object, its owners and what their tool does with the change, what was
// refused, and where the change belongs.
//
// The denials every refused edit and delete returns (changedAs, deleting)
// are written into one builder: formatting each part as a string of its
// own and then the whole cost a refusal about as much as judging it.
type messages struct {
	rule string
	// tool names the GitOps tool ("Fleet"), agent its writer ("the Fleet
	// agent"), applier who applies its objects in drift findings.
	tool, agent, applier string
	// breakGlass is the configured group, if any.
	breakGlass string
}

// denialRoom is what a denial's builder starts with: room for the usual
// one, so that it is written without growing.
const denialRoom = 384

func (m messages) emergency() string {
	var b strings.Builder
	m.writeEmergency(&b)
	return b.String()
}

func (m messages) writeEmergency(b *strings.Builder) {
	if m.breakGlass == "" {
		b.WriteByte('.')
		return
	}
	b.WriteString("; in an emergency repeat the request as a member of ")
	b.WriteString(m.breakGlass)
	b.WriteByte('.')
}

// instead is where a refused change belongs, and the ways out.
func (m messages) instead(what string, owners []Owner) string {
	var b strings.Builder
	m.writeInstead(&b, what, owners)
	return b.String()
}

func (m messages) writeInstead(b *strings.Builder, what string, owners []Owner) {
	b.WriteString(what)
	for _, o := range owners {
		if o.Hint != "" {
			b.WriteString("; ")
			b.WriteString(o.Hint)
			break
		}
	}
	m.writeEmergency(b)
}

// managedBy is the first sentence of every denial about a managed object.
func (m messages) managedBy(ref Ref, owners []Owner) string {
	var b strings.Builder
	m.writeManagedBy(&b, ref, owners)
	return b.String()
}

func (m messages) writeManagedBy(b *strings.Builder, ref Ref, owners []Owner) {
	b.WriteString(m.rule)
	b.WriteString(": ")
	ref.write(b)
	b.WriteString(" is managed by ")
	writeNames(b, owners)
	b.WriteString("; ")
	if len(owners) > 0 {
		b.WriteString(owners[0].Revert)
	}
	b.WriteByte('.')
}

// ManagedBy is the first sentence of the guard's denials, for findings
// that speak of a managed object the same way.
func (g *Guard) ManagedBy(ref Ref, owners []Owner) string { return g.msg.managedBy(ref, owners) }

// names joins the owners' names for a message.
func names(owners []Owner) string {
	var b strings.Builder
	writeNames(&b, owners)
	return b.String()
}

func writeNames(b *strings.Builder, owners []Owner) {
	for i, o := range owners {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(o.Name)
	}
}

// changedAs refuses an update of a managed object for a change named in
// words rather than paths.
func (m messages) changedAs(ref Ref, owners []Owner, what string) string {
	return m.changed(ref, owners, func(b *strings.Builder) { b.WriteString(what) })
}

// changedPaths refuses an update of a managed object for the changed
// paths c names.
func (m messages) changedPaths(ref Ref, owners []Owner, c object.Changes) string {
	return m.changed(ref, owners, func(b *strings.Builder) { writeChangeList(b, c) })
}

// changed is changedAs, with what changed written by what.
func (m messages) changed(ref Ref, owners []Owner, what func(*strings.Builder)) string {
	var b strings.Builder
	b.Grow(denialRoom)
	m.writeManagedBy(&b, ref, owners)
	b.WriteString(" Changed: ")
	what(&b)
	b.WriteString(". ")
	m.writeInstead(&b, "Change it in the Git repository instead", owners)
	return b.String()
}

// ChangeList names the first changed paths and how many more there are.
func ChangeList(c object.Changes) string {
	var b strings.Builder
	writeChangeList(&b, c)
	return b.String()
}

func writeChangeList(b *strings.Builder, c object.Changes) {
	for i, p := range c.First {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	if more := c.Total - len(c.First); more > 0 {
		if len(c.First) > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("and ")
		b.WriteString(strconv.Itoa(more))
		b.WriteString(" more")
	}
}

// deleting refuses the deletion of a managed object.
func (m messages) deleting(ref Ref, owners []Owner) string {
	var b strings.Builder
	b.Grow(denialRoom)
	m.writeManagedBy(&b, ref, owners)
	b.WriteString(" Deleting it is refused: ")
	b.WriteString(m.tool)
	b.WriteString(" would re-create it. ")
	m.writeInstead(&b, "Remove it from the Git repository instead", owners)
	return b.String()
}

// stripping refuses an update that removes the tool's ownership markers.
func (m messages) stripping(ref Ref, owners []Owner, keys []string) string {
	return fmt.Sprintf("%s Removing %s's ownership %s is refused: it would hide the object from %s while it still runs as deployed from Git. %s",
		m.managedBy(ref, owners), m.tool, strings.Join(keys, " and "), m.tool, m.instead("Change it in the Git repository instead", owners))
}

// spoofing refuses a create, or an update of an unclaimed object, that
// sets the tool's ownership markers: only the tool may claim an object.
func (m messages) spoofing(ref Ref, verb string, c Claim) string {
	return fmt.Sprintf("%s: %s %s %s's ownership %s (%s), which only %s sets; a hand-made object with them passes for Git-managed, and %s may prune or overwrite it. Remove %s's keys, or add the object to the Git repository instead%s",
		m.rule, ref, verb, m.tool, strings.Join(c.Keys, " and "), c.Named, m.agent, m.tool, m.tool, m.emergency())
}

// addingOwners refuses an update that gives a managed object new owners.
func (m messages) addingOwners(ref Ref, owners []Owner, added []metav1.OwnerReference) string {
	refs := make([]string, len(added))
	for i, o := range added {
		refs[i] = o.Kind + " " + o.Name
	}
	return fmt.Sprintf("%s Adding the owner reference %s is refused: the garbage collector would delete the object when that owner is deleted, outside Git. %s",
		m.managedBy(ref, owners), strings.Join(refs, ", "), m.instead("Change it in the Git repository instead", owners))
}

// optOutRefused refuses an opt-out added by someone outside the opt-out
// groups, or together with other changes.
func (m messages) optOutRefused(ref Ref, owners []Owner, c object.Changes, groups []string) string {
	who := "nobody: no opt-out group is configured"
	if len(groups) > 0 {
		who = "only members of " + strings.Join(groups, ", ") + ", as a change of its own"
	}
	return fmt.Sprintf("%s Adding an opt-out (%s) is refused: it stops %s from managing the object, and may be set by %s. %s",
		m.managedBy(ref, owners), ChangeList(c), m.tool, who, m.instead("Change it in the Git repository instead", owners))
}
