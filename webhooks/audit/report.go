package audit

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// The reports Steward writes.
const (
	// Source is every result's source, how Policy Reporter and others
	// tell Steward's results from other engines'.
	Source = "steward"
	// ReportName names Steward's PolicyReport in each namespace and its
	// ClusterPolicyReport.
	ReportName = "steward"
	// ManagedByLabel, set to ManagedBy, marks the reports Steward owns:
	// it lists, updates and deletes only those.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "steward"
	// OmittedAnnotation holds the number of results a report left out
	// to stay within MaxResults.
	OmittedAnnotation = "steward.dev/omitted-results"
	// MaxResults bounds each report: a cluster with thousands of
	// suspended objects must not make an object etcd refuses (1.5 MiB).
	MaxResults = 1000
	// MaxReportBytes bounds the results of one report as JSON, whatever
	// their number: results past it are left out like those past
	// MaxResults.
	MaxReportBytes = 1 << 20
)

// Result is one entry of a report, as PolicyReport v1alpha2 and
// OpenReports v1alpha1 both spell it. Category, Severity and Scored are
// what Policy Reporter groups and filters results by, besides source,
// policy, rule and result.
type Result struct {
	Source     string                   `json:"source"`
	Policy     string                   `json:"policy"`
	Rule       string                   `json:"rule"`
	Category   string                   `json:"category,omitempty"`
	Severity   string                   `json:"severity,omitempty"`
	Scored     bool                     `json:"scored,omitempty"`
	Result     string                   `json:"result"`
	Resources  []corev1.ObjectReference `json:"resources,omitempty"`
	Message    string                   `json:"message,omitempty"`
	Properties map[string]string        `json:"properties,omitempty"`
	Timestamp  Timestamp                `json:"timestamp"`
}

// Timestamp is when Steward first saw the result, in the report's format.
type Timestamp struct {
	Seconds int64 `json:"seconds"`
	Nanos   int32 `json:"nanos"`
}

// Summary counts a report's results by verdict.
type Summary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// Report is what one PolicyReport (Namespace set) or the
// ClusterPolicyReport holds.
type Report struct {
	Namespace string
	Results   []Result
	Summary   Summary
	// Omitted is how many results were left out past MaxResults.
	Omitted int
}

// FromFinding is the report entry of a rule's finding, first seen at
// seen. Its category is the rule's (the policy), and its severity the
// finding's result's (severityOf); every result is scored, so Policy
// Reporter counts Steward's failures as failures.
func FromFinding(ruleName string, f rule.Finding, seen time.Time) Result {
	return Result{
		Source:     Source,
		Policy:     ruleName,
		Rule:       f.Check,
		Category:   ruleName,
		Severity:   severityOf(f.Result),
		Scored:     true,
		Result:     string(f.Result),
		Resources:  []corev1.ObjectReference{f.Object},
		Message:    serving.TruncateNote(f.Message),
		Properties: f.Properties,
		Timestamp:  Timestamp{Seconds: seen.Unix()},
	}
}

// severityOf is a result's severity in the reports' terms: a failure is
// what the rule exists to prevent (high), a warning needs a look
// (medium), a pass is information.
func severityOf(r rule.AuditResult) string {
	switch r {
	case rule.AuditFail:
		return "high"
	case rule.AuditWarn:
		return "medium"
	}
	return "info"
}

// Results turns every rule's findings into report entries, in report
// order (Less), stamped now.
func Results(findings map[string][]rule.Finding, now time.Time) []Result {
	var out []Result
	for _, name := range slices.Sorted(maps.Keys(findings)) {
		for _, f := range findings[name] {
			out = append(out, FromFinding(name, f, now))
		}
	}
	slices.SortStableFunc(out, Compare)
	return out
}

// resultRank orders verdicts: what needs fixing first.
var resultRank = map[string]int{"fail": 0, "error": 1, "warn": 2, "skip": 3, "pass": 4}

// Compare orders results as reports list them: failures before
// warnings before passes, then by policy, rule, namespace, name, kind
// and message, so the same findings always make the same report.
func Compare(a, b Result) int {
	ra, rb := rank(a.Result), rank(b.Result)
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	oa, ob := a.object(), b.object()
	return cmp.Or(
		cmp.Compare(a.Policy, b.Policy),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(oa.Namespace, ob.Namespace),
		cmp.Compare(oa.Name, ob.Name),
		cmp.Compare(oa.Kind, ob.Kind),
		cmp.Compare(oa.APIVersion, ob.APIVersion),
		cmp.Compare(a.Message, b.Message),
	)
}

func rank(result string) int {
	if r, ok := resultRank[result]; ok {
		return r
	}
	return len(resultRank)
}

// object is the resource the result is about.
func (r Result) object() corev1.ObjectReference {
	if len(r.Resources) == 0 {
		return corev1.ObjectReference{}
	}
	return r.Resources[0]
}

// key identifies a result across passes, whatever its message says, so
// its first-seen timestamp is kept.
func (r Result) key() string {
	o := r.object()
	return r.Policy + "\x00" + r.Rule + "\x00" + r.Result + "\x00" + o.APIVersion + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name + "\x00" + string(o.UID)
}

// Reports groups results, in report order, by namespace ("" for the
// ClusterPolicyReport), each cut to max results and MaxReportBytes, with
// the rest counted. A namespace with no results has no report.
func Reports(results []Result, max int) map[string]*Report {
	out := map[string]*Report{}
	size := map[string]int{}
	for _, r := range results {
		ns := r.object().Namespace
		rep := out[ns]
		if rep == nil {
			rep = &Report{Namespace: ns}
			out[ns] = rep
		}
		n := jsonSize(r)
		if len(rep.Results) >= max || size[ns]+n > MaxReportBytes {
			rep.Omitted++
			continue
		}
		size[ns] += n
		rep.Results = append(rep.Results, r)
		rep.Summary.add(r.Result)
	}
	return out
}

// jsonSize is how many bytes r takes in a report.
func jsonSize(r Result) int {
	data, err := json.Marshal(r)
	if err != nil {
		return 0
	}
	return len(data)
}

func (s *Summary) add(result string) {
	switch result {
	case "pass":
		s.Pass++
	case "fail":
		s.Fail++
	case "warn":
		s.Warn++
	case "error":
		s.Error++
	case "skip":
		s.Skip++
	}
}

// keepTimestamps gives each result the timestamp of the same result in
// the previous reports, when there is one: a result's timestamp is when
// it was first seen, and a report whose results did not change is not
// written again.
func keepTimestamps(results []Result, previous []Result) {
	seen := make(map[string]Timestamp, len(previous))
	for _, p := range previous {
		seen[p.key()] = p.Timestamp
	}
	for i := range results {
		if t, ok := seen[results[i].key()]; ok {
			results[i].Timestamp = t
		}
	}
}
