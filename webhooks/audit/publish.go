package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ErrNotServed says the CRDs of no report API the audit writes are
// installed: nothing can be published until one is.
var ErrNotServed = errors.New("the CRDs of no report API the audit writes are served")

// Publisher writes Steward's reports through a dynamic client, which
// needs no REST mapping: a CRD installed after Steward started is
// written to at the next pass.
type Publisher struct {
	Client dynamic.Interface
	// APIs are the report APIs written, each whose CRDs are served.
	APIs []ReportAPI
	// MaxResults bounds each report; MaxResults when 0.
	MaxResults int
	now        func() time.Time
}

// NewPublisher writes reports of apis through c: PolicyReports when apis
// is empty.
func NewPublisher(c dynamic.Interface, apis ...ReportAPI) *Publisher {
	if len(apis) == 0 {
		apis = []ReportAPI{PolicyReportAPI()}
	}
	return &Publisher{Client: c, APIs: apis, MaxResults: MaxResults, now: time.Now}
}

// Published is what one Publish did.
type Published struct {
	Created, Updated, Deleted, Unchanged int
}

// Publish makes Steward's reports of every API of p.APIs whose CRDs are
// served hold answered's findings (by rule name) and, for each rule in
// kept (rules that could not answer this pass), the results the reports
// already hold for it; results of every other rule leave the reports.
// Reports whose content is unchanged are not written; reports left with
// no results are deleted. It goes on past a failed write and returns
// every error; ErrNotServed when none of the APIs is served.
func (p *Publisher) Publish(ctx context.Context, answered map[string][]rule.Finding, kept []string) (Published, error) {
	var done Published
	var errs []error
	served := 0
	// One time for the pass: each report API dates a new result alike.
	now := p.now()
	for _, api := range p.APIs {
		d, err := p.publish(ctx, api, answered, kept, now)
		if errors.Is(err, errAPINotServed) {
			continue
		}
		served++
		done.Created, done.Updated, done.Deleted, done.Unchanged = done.Created+d.Created, done.Updated+d.Updated, done.Deleted+d.Deleted, done.Unchanged+d.Unchanged
		if err != nil {
			errs = append(errs, err)
		}
	}
	if served == 0 && len(p.APIs) > 0 {
		return done, ErrNotServed
	}
	return done, errors.Join(errs...)
}

// errAPINotServed: one report API's CRDs are not served.
var errAPINotServed = errors.New("not served")

// publish is Publish for one report API.
func (p *Publisher) publish(ctx context.Context, api ReportAPI, answered map[string][]rule.Finding, kept []string, now time.Time) (Published, error) {
	var done Published
	existing, err := p.existing(ctx, api)
	if err != nil {
		return done, err
	}
	parsed := make(map[string][]Result, len(existing))
	var previous []Result
	for ns, u := range existing {
		parsed[ns] = resultsOf(u)
		previous = append(previous, parsed[ns]...)
	}
	results := Results(answered, now)
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
		have := existing[ns]
		res := p.resource(api, ns)
		switch {
		case have == nil:
			if _, err := res.Create(ctx, reportObject(api, desired[ns]), metav1.CreateOptions{}); err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// Its objects go with it: nothing to report.
					continue
				}
				errs = append(errs, fmt.Errorf("creating %s: %w", describe(api, ns), err))
				continue
			}
			done.Created++
		case sameContent(api, have, parsed[ns], desired[ns]):
			done.Unchanged++
		default:
			want := reportObject(api, desired[ns])
			want.SetResourceVersion(have.GetResourceVersion())
			if _, err := res.Update(ctx, want, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("updating %s: %w", describe(api, ns), err))
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
		pre := metav1.Preconditions{UID: ptr.To(u.GetUID()), ResourceVersion: ptr.To(u.GetResourceVersion())}
		err := p.resource(api, ns).Delete(ctx, ReportName, metav1.DeleteOptions{Preconditions: &pre})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(api, ns), err))
			continue
		}
		done.Deleted++
	}
	return done, errors.Join(errs...)
}

func (p *Publisher) resource(api ReportAPI, ns string) dynamic.ResourceInterface {
	gvr, _ := api.resource(ns)
	if ns == "" {
		return p.Client.Resource(gvr)
	}
	return p.Client.Resource(gvr).Namespace(ns)
}

func describe(api ReportAPI, ns string) string {
	_, kind := api.resource(ns)
	if ns == "" {
		return kind + " " + ReportName
	}
	return kind + " " + ns + "/" + ReportName
}

// existing are Steward's reports of api now, by namespace ("" for the
// cluster-scoped report): those it labelled, under its name.
func (p *Publisher) existing(ctx context.Context, api ReportAPI) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	opts := metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy}
	for _, gvr := range []schema.GroupVersionResource{api.Namespaced, api.Cluster} {
		list, err := p.Client.Resource(gvr).List(ctx, opts)
		if err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return nil, errAPINotServed
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

// ReportObject is the report of api holding r: a PolicyReport or
// ClusterPolicyReport, an OpenReports Report or ClusterReport.
func ReportObject(api ReportAPI, r *Report) *unstructured.Unstructured {
	return reportObject(api, r)
}

func reportObject(api ReportAPI, r *Report) *unstructured.Unstructured {
	gvr, kind := api.resource(r.Namespace)
	content := struct {
		Results []Result `json:"results"`
		Summary Summary  `json:"summary"`
	}{r.Results, r.Summary}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&content)
	if err != nil {
		panic(err) // results and summaries always convert
	}
	obj["apiVersion"] = gvr.GroupVersion().String()
	obj["kind"] = kind
	if api.TopLevelSource {
		obj["source"] = Source
	}
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
// skipped, and so dropped at the next write. It reads the fields Steward
// writes straight from the object: a pass reads every report.
func resultsOf(u *unstructured.Unstructured) []Result {
	raw, _ := u.Object["results"].([]any)
	out := make([]Result, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		r := Result{Source: str(m, "source"), Policy: str(m, "policy"), Rule: str(m, "rule"), Result: str(m, "result"), Message: str(m, "message"),
			Category: str(m, "category"), Severity: str(m, "severity")}
		r.Scored, _ = m["scored"].(bool)
		resources, _ := m["resources"].([]any)
		for _, res := range resources {
			ref, _ := res.(map[string]any)
			r.Resources = append(r.Resources, corev1.ObjectReference{
				APIVersion: str(ref, "apiVersion"), Kind: str(ref, "kind"), Namespace: str(ref, "namespace"),
				Name: str(ref, "name"), UID: types.UID(str(ref, "uid")),
			})
		}
		if props, ok := m["properties"].(map[string]any); ok && len(props) > 0 {
			r.Properties = make(map[string]string, len(props))
			for k, v := range props {
				r.Properties[k], _ = v.(string)
			}
		}
		ts, _ := m["timestamp"].(map[string]any)
		r.Timestamp = Timestamp{Seconds: number(ts["seconds"]), Nanos: int32(number(ts["nanos"]))}
		out = append(out, r)
	}
	return out
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// number reads an integer as the API server's JSON (int64) or another
// decoder (float64) gives it.
func number(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return 0
}

// sameContent says whether have, whose results are haveResults, already
// holds what rep would write: the same results, summary, label, omitted
// count and, where the API has it, report source. Fields Steward does not
// write are ignored.
func sameContent(api ReportAPI, have *unstructured.Unstructured, haveResults []Result, rep *Report) bool {
	if api.TopLevelSource && str(have.Object, "source") != Source {
		return false
	}
	omitted := ""
	if rep.Omitted > 0 {
		omitted = strconv.Itoa(rep.Omitted)
	}
	if have.GetLabels()[ManagedByLabel] != ManagedBy || have.GetAnnotations()[OmittedAnnotation] != omitted {
		return false
	}
	return summaryOf(have) == rep.Summary && slices.EqualFunc(haveResults, rep.Results, sameResult)
}

// sameResult compares two results as they are written: an empty map or
// list is no field at all.
func sameResult(a, b Result) bool {
	return a.Source == b.Source && a.Policy == b.Policy && a.Rule == b.Rule && a.Result == b.Result &&
		a.Category == b.Category && a.Severity == b.Severity && a.Scored == b.Scored &&
		a.Message == b.Message && a.Timestamp == b.Timestamp &&
		slices.Equal(a.Resources, b.Resources) && maps.Equal(a.Properties, b.Properties)
}

func summaryOf(u *unstructured.Unstructured) Summary {
	m, _ := u.Object["summary"].(map[string]any)
	return Summary{
		Pass: int(number(m["pass"])), Fail: int(number(m["fail"])), Warn: int(number(m["warn"])),
		Error: int(number(m["error"])), Skip: int(number(m["skip"])),
	}
}
