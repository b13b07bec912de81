package gitops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckDrift is every guard's audit check of changes made outside Git.
const CheckDrift = "drift"

// DriftFinding reports the drift d of a managed object: the denials' first
// sentence, who changed which fields since the tool last applied it, and
// where the change belongs.
func (g *Guard) DriftFinding(ref Ref, owners []Owner, d Drift) rule.Finding {
	c := object.Changes{First: d.Fields, Total: len(d.Fields) + d.Unlisted}
	if len(c.First) > ListedPaths {
		c.First = c.First[:ListedPaths]
	}
	list := ChangeList(c)
	managers := strings.Join(d.Managers, ", ")
	keep := g.msg.rule + "'s ignoredFields"
	for _, o := range owners {
		if o.IgnoreIn != "" {
			keep = o.IgnoreIn + " and in " + keep
			break
		}
	}
	return rule.Finding{
		Check:  CheckDrift,
		Result: rule.AuditFail,
		Object: corev1.ObjectReference{
			APIVersion: ref.GroupVersion().String(), Kind: ref.Kind,
			Namespace: ref.Namespace, Name: ref.Name,
		},
		Message: fmt.Sprintf("%s Changed since %s last applied it, by %s: %s. Change it in the Git repository instead; "+
			"if the change is meant to stay, ignore the field in %s.",
			g.ManagedBy(ref, owners), g.msg.applier, managers, list, keep),
		Properties: map[string]string{
			"managers":  managers,
			"fields":    list,
			"changedAt": d.At.UTC().Format(time.RFC3339),
			"changes":   strconv.Itoa(c.Total),
		},
	}
}

// AuditDrift judges one object the audit listed, whose owners the
// resolver found: drift is reported when an owner's record lists the
// object, none lets it opt out, and a field manager other than the
// owners' and Kubernetes' wrote after the owners' tool, to fields that are
// neither server-managed, control writes, ignored by an owner nor
// configured as ignored. An owner's paused reconciliation does not hide
// the drift: the change is lost when it resumes.
func (g *Guard) AuditDrift(ref Ref, owners []Owner, managedFields []metav1.ManagedFieldsEntry) (rule.Finding, bool) {
	managing, _ := managingOwners(owners)
	if len(managing) == 0 {
		return rule.Finding{}, false
	}
	var agent []string
	skip := slices.Clip(g.skip.edits(ref.GroupKind()))
	if optedOut(managing) {
		return rule.Finding{}, false
	}
	for _, o := range managing {
		agent = append(agent, o.FieldManagers...)
		skip = append(skip, o.Skip...)
	}
	d, ok := DriftOf(managedFields, agent, skip)
	if !ok {
		return rule.Finding{}, false
	}
	return g.DriftFinding(ref, managing, d), true
}

// optedOut reports whether one of owners lets the object opt out of the
// tool's management: the tool then applies nothing to it.
func optedOut(owners []Owner) bool {
	return slices.ContainsFunc(owners, func(o Owner) bool { return o.OptedOut != "" })
}

// SortFindings orders findings by kind, namespace and name, as reports
// list them.
func SortFindings(out []rule.Finding) {
	slices.SortStableFunc(out, func(a, b rule.Finding) int {
		return cmp.Or(strings.Compare(a.Object.Kind, b.Object.Kind),
			strings.Compare(a.Object.Namespace, b.Object.Namespace),
			strings.Compare(a.Object.Name, b.Object.Name))
	})
}

// The audit reads drift from managedFields, which only the objects
// themselves carry: the guards cache owners, never the objects they
// deploy, so fluxguard's and argocdguard's audits list them. RBAC has no
// metadata-only verb, and list on every resource would include Secrets,
// which Steward is never granted; so a guard's audit lists only the kinds
// its rule is granted: the workloads of scaledKinds (AuditRBAC), which
// every GitOps tool deploys, and the tool's own kinds its owner cache
// already lists (a Kustomization applied by another, an app of apps).

// AuditRBAC is what the audit's lists of workloads need, list across the
// cluster of scaledKinds' resources, what a scale request's check of who
// declares the replicas and the fight check's read of them need, get
// (APIWorkloads, AutoscalerFights), and the fight check's list of the
// HorizontalPodAutoscalers.
func AuditRBAC() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "replicasets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"replicationcontrollers"}, Verbs: []string{"get", "list"}},
		AutoscalerRBAC(),
	}
}

// AutoscalerRBAC is what the fight check's list of the
// HorizontalPodAutoscalers needs (AutoscalerFights).
func AutoscalerRBAC() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list"}}
}

// Audited reports whether a guard's audit lists objects of the kind gk:
// a workload of scaledKinds, or one of the tool's own kinds.
func Audited(gk schema.GroupKind, own ...schema.GroupKind) bool {
	for _, gvk := range scaledKinds {
		if gvk.GroupKind() == gk {
			return true
		}
	}
	return slices.Contains(own, gk)
}

// AuditPageSize is how many objects one list request of the audit asks
// for: a page of metadata is a few megabytes at most.
const AuditPageSize = 500

// KindList is one list the audit makes: every object of a kind, in every
// namespace, or those carrying Label when set (the tool's ownership
// label, which the API server selects on), as metadata only.
type KindList struct {
	schema.GroupVersionKind
	Label string
}

func (l KindList) String() string {
	s := l.GroupVersionKind.String()
	if l.Label != "" {
		s += " labelled " + l.Label
	}
	return s
}

// ListKinds lists the objects of each kind through api, AuditPageSize at a
// time, and hands each to each. A kind api may not list, or that is not
// served (forbidden, not found, a kind the API server does not know), is
// skipped and returned in skipped; it is an error only when every kind is
// skipped. Any other error, or each's, ends the listing with it.
func ListKinds(ctx context.Context, api client.Reader, lists []KindList, each func(KindList, *metav1.PartialObjectMetadata) error) (skipped []KindList, err error) {
	if len(lists) > 0 && api == nil {
		return nil, errors.New("no API reader to list objects with")
	}
	var errs []error
	for _, l := range lists {
		err := listKind(ctx, api, l, each)
		switch {
		case err == nil:
		case errors.Is(err, errUnlistable):
			skipped = append(skipped, l)
			errs = append(errs, err)
		default:
			return skipped, err
		}
	}
	if len(lists) > 0 && len(skipped) == len(lists) {
		return skipped, fmt.Errorf("no kind could be listed: %w", errors.Join(errs...))
	}
	return skipped, nil
}

// errUnlistable marks a kind the audit skips.
var errUnlistable = errors.New("cannot be listed")

func listKind(ctx context.Context, api client.Reader, l KindList, each func(KindList, *metav1.PartialObjectMetadata) error) error {
	opts := []client.ListOption{client.Limit(AuditPageSize)}
	if l.Label != "" {
		req, err := labels.NewRequirement(l.Label, selection.Exists, nil)
		if err != nil {
			return fmt.Errorf("listing %s: %w", l, err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)})
	}
	next := ""
	for page := 0; ; page++ {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(l.GroupVersion().WithKind(l.Kind + "List"))
		err := api.List(ctx, list, append(opts, client.Continue(next))...)
		if err != nil {
			if page == 0 && unlistable(err) {
				return fmt.Errorf("%s %w: %w", l, errUnlistable, err)
			}
			return fmt.Errorf("listing %s: %w", l, err)
		}
		for i := range list.Items {
			if err := each(l, &list.Items[i]); err != nil {
				return err
			}
		}
		if next = list.Continue; next == "" {
			return nil
		}
	}
}

// unlistable reports whether err says the kind cannot be listed at all,
// rather than not this time.
func unlistable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err)
}

// MetaView is a view of a listed object's name, namespace, labels and
// annotations, for resolvers, which read objects through views.
func MetaView(o *metav1.PartialObjectMetadata) *object.View {
	type meta struct {
		Name        string            `json:"name,omitempty"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	raw, err := json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{o.Name, o.Namespace, o.Labels, o.Annotations}})
	if err != nil {
		return object.New(nil)
	}
	return object.New(raw)
}

// AuditListed is a guard's audit over objects listed at audit time: it
// lists each kind of lists once (ListKinds), judges each object once
// (one carrying two owners' markers, or listed at two versions, is
// listed twice) with the owners owners finds for it (nil: none, skip it;
// MetaView reads it as a request's object), and returns the drift
// findings and the fights over replicas with an autoscaler
// (AutoscalerFights) in report order.
func (g *Guard) AuditListed(ctx context.Context, api client.Reader, lists []KindList, owners func(Ref, *metav1.PartialObjectMetadata) ([]Owner, error)) ([]rule.Finding, error) {
	var out []rule.Finding
	var declared []GitReplicas
	judged := map[string]bool{}
	_, err := ListKinds(ctx, api, lists, func(l KindList, o *metav1.PartialObjectMetadata) error {
		key := l.Group + "/" + l.Kind + "/" + o.Namespace + "/" + o.Name
		if judged[key] {
			return nil
		}
		judged[key] = true
		ref := Ref{GroupVersionKind: l.GroupVersionKind, Namespace: o.Namespace, Name: o.Name}
		found, err := owners(ref, o)
		if err != nil || found == nil {
			return err
		}
		if f, ok := g.AuditDrift(ref, found, o.ManagedFields); ok {
			out = append(out, f)
		}
		if managing, _ := managingOwners(found); len(managing) > 0 && !optedOut(managing) && Audited(ref.GroupKind()) && ReplicasOwned(o, managing) {
			declared = append(declared, GitReplicas{Ref: ref, Owners: managing})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g.WithFights(ctx, api, out, declared)
}

// WithFights are the drift findings drifted and the fights over the
// replicas of declared with an autoscaler (AutoscalerFights), in report
// order: every guard's audit ends with them.
func (g *Guard) WithFights(ctx context.Context, api client.Reader, drifted []rule.Finding, declared []GitReplicas) ([]rule.Finding, error) {
	fights, err := g.AutoscalerFights(ctx, api, declared)
	if err != nil {
		return nil, err
	}
	out := append(drifted, fights...)
	SortFindings(out)
	return out, nil
}

// AuditCached is AuditListed for a guard whose resolver reads the tool's
// records from c: the audit fails, naming them (what), until they are set
// up, and lists reads from them the kinds to list.
func (g *Guard) AuditCached(ctx context.Context, api client.Reader, c *Caches, what string, lists func() ([]KindList, error), owners func(Ref, *metav1.PartialObjectMetadata) ([]Owner, error)) ([]rule.Finding, error) {
	if !c.IsSetUp() {
		return nil, errors.New(what + " cache is not set up")
	}
	l, err := lists()
	if err != nil {
		return nil, err
	}
	return g.AuditListed(ctx, api, l, owners)
}

// KindLists are the lists of kinds an audit makes, with label: those of
// kinds (the kinds the tool's records hold, once each) that it may list,
// a workload or one of own, the tool's own kinds.
func KindLists(kinds []schema.GroupVersionKind, label string, own ...schema.GroupKind) []KindList {
	var out []KindList
	for _, gvk := range DistinctKinds(kinds) {
		if Audited(gvk.GroupKind(), own...) {
			out = append(out, KindList{GroupVersionKind: gvk, Label: label})
		}
	}
	return out
}
