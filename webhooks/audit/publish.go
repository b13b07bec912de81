package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ErrNotServed says the PolicyReport CRDs are not installed: nothing can
// be published until they are.
var ErrNotServed = errors.New("the wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport CRDs are not served")

// Publisher writes Steward's reports through a dynamic client, which
// needs no REST mapping: a CRD installed after Steward started is
// written to at the next pass.
type Publisher struct {
	Client dynamic.Interface
	// MaxResults bounds each report; MaxResults when 0.
	MaxResults int
	now        func() time.Time
}

// NewPublisher writes reports through c.
func NewPublisher(c dynamic.Interface) *Publisher {
	return &Publisher{Client: c, MaxResults: MaxResults, now: time.Now}
}

// Published is what one Publish did.
type Published struct {
	Created, Updated, Deleted, Unchanged int
}

// Publish makes Steward's reports hold answered's findings (by rule
// name) and, for each rule in kept (rules that could not answer this
// pass), the results the reports already hold for it; results of every
// other rule leave the reports. Reports whose content is unchanged are
// not written; reports left with no results are deleted. It goes on
// past a failed write and returns every error; ErrNotServed when the
// CRDs are missing.
func (p *Publisher) Publish(ctx context.Context, answered map[string][]rule.Finding, kept []string) (Published, error) {
	var done Published
	existing, err := p.existing(ctx)
	if err != nil {
		return done, err
	}
	var previous []Result
	for _, u := range existing {
		previous = append(previous, resultsOf(u)...)
	}
	results := Results(answered, p.now())
	keepTimestamps(results, previous)
	for _, r := range previous {
		if slices.Contains(kept, r.Policy) {
			results = append(results, r)
		}
	}
	slices.SortStableFunc(results, Compare)
	max := p.MaxResults
	if max <= 0 {
		max = MaxResults
	}
	desired := Reports(results, max)

	var errs []error
	for _, ns := range slices.Sorted(maps.Keys(desired)) {
		want := reportObject(desired[ns])
		have := existing[ns]
		res := p.resource(ns)
		switch {
		case have == nil:
			if _, err := res.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("creating %s: %w", describe(ns), err))
				continue
			}
			done.Created++
		case sameContent(have, want):
			done.Unchanged++
		default:
			want.SetResourceVersion(have.GetResourceVersion())
			if _, err := res.Update(ctx, want, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("updating %s: %w", describe(ns), err))
				continue
			}
			done.Updated++
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(existing)) {
		if _, ok := desired[ns]; ok {
			continue
		}
		u := existing[ns]
		pre := metav1.Preconditions{UID: ptr(u.GetUID()), ResourceVersion: ptr(u.GetResourceVersion())}
		err := p.resource(ns).Delete(ctx, ReportName, metav1.DeleteOptions{Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(ns), err))
			continue
		}
		done.Deleted++
	}
	return done, errors.Join(errs...)
}

func ptr[T any](v T) *T { return &v }

func (p *Publisher) resource(ns string) dynamic.ResourceInterface {
	if ns == "" {
		return p.Client.Resource(ClusterPolicyReports)
	}
	return p.Client.Resource(PolicyReports).Namespace(ns)
}

func describe(ns string) string {
	if ns == "" {
		return "ClusterPolicyReport " + ReportName
	}
	return "PolicyReport " + ns + "/" + ReportName
}

// existing are Steward's reports now, by namespace ("" for the
// ClusterPolicyReport): those it labelled, under its name.
func (p *Publisher) existing(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	opts := metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy}
	for _, gvr := range []schema.GroupVersionResource{PolicyReports, ClusterPolicyReports} {
		list, err := p.Client.Resource(gvr).List(ctx, opts)
		if err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return nil, ErrNotServed
			}
			return nil, fmt.Errorf("listing Steward's %s: %w", gvr.Resource, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetName() == ReportName {
				out[u.GetNamespace()] = u
			}
		}
	}
	return out, nil
}

// reportObject is the PolicyReport (or ClusterPolicyReport) holding r.
func reportObject(r *Report) *unstructured.Unstructured {
	kind := "PolicyReport"
	if r.Namespace == "" {
		kind = "ClusterPolicyReport"
	}
	content := struct {
		Results []Result `json:"results"`
		Summary Summary  `json:"summary"`
	}{r.Results, r.Summary}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&content)
	if err != nil {
		panic(err) // results and summaries always convert
	}
	obj["apiVersion"] = PolicyReports.GroupVersion().String()
	obj["kind"] = kind
	u := &unstructured.Unstructured{Object: obj}
	u.SetName(ReportName)
	u.SetNamespace(r.Namespace)
	u.SetLabels(map[string]string{ManagedByLabel: ManagedBy})
	if r.Omitted > 0 {
		u.SetAnnotations(map[string]string{OmittedAnnotation: strconv.Itoa(r.Omitted)})
	}
	return u
}

// resultsOf reads a report's results; entries it cannot read are
// skipped, and so dropped at the next write.
func resultsOf(u *unstructured.Unstructured) []Result {
	raw, _, _ := unstructured.NestedSlice(u.Object, "results")
	out := make([]Result, 0, len(raw))
	for _, item := range raw {
		data, err := json.Marshal(item)
		if err != nil {
			continue
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			continue
		}
		out = append(out, r)
	}
	return out
}

// sameContent says whether have already holds what want would write:
// the same results (read back through Result, so fields Steward does not
// write are ignored), summary, label and omitted count.
func sameContent(have, want *unstructured.Unstructured) bool {
	if have.GetLabels()[ManagedByLabel] != ManagedBy ||
		have.GetAnnotations()[OmittedAnnotation] != want.GetAnnotations()[OmittedAnnotation] {
		return false
	}
	a, _ := json.Marshal(resultsOf(have))
	b, _ := json.Marshal(resultsOf(want))
	if string(a) != string(b) {
		return false
	}
	sa, _ := json.Marshal(summaryOf(have))
	sb, _ := json.Marshal(summaryOf(want))
	return string(sa) == string(sb)
}

func summaryOf(u *unstructured.Unstructured) Summary {
	var s Summary
	raw, _, _ := unstructured.NestedMap(u.Object, "summary")
	data, _ := json.Marshal(raw)
	_ = json.Unmarshal(data, &s)
	return s
}
