package audit

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Metrics reports the audit to Prometheus. It is a prometheus.Collector
// registered once per server, and keeps the last answer of each rule the
// audit asks:
//
//	steward_audit_results{rule,result}              findings by verdict (pass, fail, warn), as last answered
//	steward_audit_duration_seconds{rule}            how long the rule's last answer took
//	steward_audit_last_success_timestamp_seconds{rule}  when the rule last answered
//	steward_audit_reports_published                 1 when the last pass wrote its reports, 0 when it could not
//	steward_audit_leader                            1 while this replica audits (holds the Lease), 0 otherwise
//
// A rule that could not answer keeps its last counts; a rule the audit
// no longer asks (disabled, or turned off) has no series. A replica that
// stops auditing (it lost the Lease) drops every series but
// steward_audit_leader, so only the replica that audits reports findings.
type Metrics struct {
	results, duration, lastSuccess, published, leader *prometheus.Desc

	mu      sync.Mutex
	rules   map[string]*ruleMetrics
	leading bool
	// publishedOK is nil before the first pass tried to publish.
	publishedOK *bool
}

type ruleMetrics struct {
	counts      map[rule.AuditResult]int
	duration    time.Duration
	lastSuccess time.Time
}

// NewMetrics returns the audit's collector.
func NewMetrics() *Metrics {
	return &Metrics{
		results:     prometheus.NewDesc("steward_audit_results", "Findings of the background audit by rule and verdict (pass, fail, warn), as each rule last answered.", []string{"rule", "result"}, nil),
		duration:    prometheus.NewDesc("steward_audit_duration_seconds", "How long each rule's last audit took.", []string{"rule"}, nil),
		lastSuccess: prometheus.NewDesc("steward_audit_last_success_timestamp_seconds", "When each rule last answered the audit (Unix time).", []string{"rule"}, nil),
		published:   prometheus.NewDesc("steward_audit_reports_published", "1 when the last audit pass wrote Steward's PolicyReports (or found them current), 0 when it could not (the CRDs are not served, or a write failed).", nil, nil),
		leader:      prometheus.NewDesc("steward_audit_leader", "1 while this replica runs the background audit (it holds the Lease "+LeaseName+", or audits without leader election), 0 otherwise.", nil, nil),
		rules:       map[string]*ruleMetrics{},
	}
}

// setLeading records whether this replica audits; when it stops, the
// findings it counted are dropped: the replica that audits now has them.
func (m *Metrics) setLeading(leading bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leading = leading
	if !leading {
		m.rules = map[string]*ruleMetrics{}
		m.publishedOK = nil
	}
}

// verdicts always reported, so an alert on fail > 0 has a series to read.
var verdicts = []rule.AuditResult{rule.AuditPass, rule.AuditFail, rule.AuditWarn}

// observe records a pass, at now.
func (m *Metrics) observe(p Pass, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	asked := map[string]bool{}
	for _, a := range p {
		asked[a.Rule] = true
		rm := m.rules[a.Rule]
		if rm == nil {
			rm = &ruleMetrics{}
			m.rules[a.Rule] = rm
		}
		rm.duration = a.Duration
		if a.Err != nil {
			continue
		}
		rm.lastSuccess = now
		rm.counts = map[rule.AuditResult]int{}
		for _, f := range a.Findings {
			rm.counts[f.Result]++
		}
	}
	for name := range m.rules {
		if !asked[name] {
			delete(m.rules, name)
		}
	}
}

// publishedResult records whether the pass's reports were written.
func (m *Metrics) publishedResult(ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.publishedOK = &ok
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.results
	ch <- m.duration
	ch <- m.lastSuccess
	ch <- m.published
	ch <- m.leader
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(m.rules)) {
		rm := m.rules[name]
		ch <- prometheus.MustNewConstMetric(m.duration, prometheus.GaugeValue, rm.duration.Seconds(), name)
		if rm.lastSuccess.IsZero() {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.lastSuccess, prometheus.GaugeValue, float64(rm.lastSuccess.UnixNano())/1e9, name)
		results := slices.Clone(verdicts)
		for r := range rm.counts {
			if !slices.Contains(results, r) {
				results = append(results, r)
			}
		}
		for _, r := range results {
			ch <- prometheus.MustNewConstMetric(m.results, prometheus.GaugeValue, float64(rm.counts[r]), name, string(r))
		}
	}
	leader := 0.0
	if m.leading {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(m.leader, prometheus.GaugeValue, leader)
	if m.publishedOK != nil {
		v := 0.0
		if *m.publishedOK {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.published, prometheus.GaugeValue, v)
	}
}
