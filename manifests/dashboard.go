package manifests

import (
	"encoding/json"
	"fmt"
)

// The Grafana dashboard, built from plain structs so its queries are Go
// strings the tests check like the alerts'. Every query is scoped to one
// Steward install by the $namespace variable.

type dashboard struct {
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	Tags          []string   `json:"tags"`
	SchemaVersion int        `json:"schemaVersion"`
	Refresh       string     `json:"refresh"`
	Time          timeRange  `json:"time"`
	Templating    templating `json:"templating"`
	Panels        []panel    `json:"panels"`
}

type timeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type templating struct {
	List []variable `json:"list"`
}

type variable struct {
	Name       string         `json:"name"`
	Label      string         `json:"label"`
	Type       string         `json:"type"`
	Query      any            `json:"query"`
	Datasource *datasourceRef `json:"datasource,omitempty"`
	Refresh    int            `json:"refresh,omitempty"`
	Current    map[string]any `json:"current,omitempty"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int           `json:"id"`
	Title       string        `json:"title"`
	Description string        `json:"description,omitempty"`
	Type        string        `json:"type"`
	GridPos     gridPos       `json:"gridPos"`
	Datasource  datasourceRef `json:"datasource"`
	Targets     []target      `json:"targets"`
	FieldConfig fieldConfig   `json:"fieldConfig"`
}

type gridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

type target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat,omitempty"`
	Instant      bool   `json:"instant,omitempty"`
}

type fieldConfig struct {
	Defaults fieldDefaults `json:"defaults"`
}

type fieldDefaults struct {
	Unit string `json:"unit,omitempty"`
}

// promDatasource is the dashboard's $datasource variable.
var promDatasource = datasourceRef{Type: "prometheus", UID: "${datasource}"}

// dashboardQuery is one panel's content: what it shows and how.
type dashboardQuery struct {
	title, description, kind, unit string
	exprs                          []legendExpr
}

type legendExpr struct{ expr, legend string }

// dashboardQueries are the panels, in reading order: what Steward decides,
// how fast, whether the API server reaches it, what it holds, and what
// keeps it trusted.
func (in install) dashboardQueries() []dashboardQuery {
	sel := fmt.Sprintf(`job=%q,namespace="$namespace"`, in.name)
	queries := []dashboardQuery{
		{title: "Decisions by rule and outcome", kind: "timeseries", unit: "reqps",
			description: "Every admission request a rule answered: allowed, denied, warned, audited, bypassed (break-glass) or errored.",
			exprs:       []legendExpr{{fmt.Sprintf(`sum by (rule, decision) (rate(steward_decisions_total{%s}[$__rate_interval]))`, sel), "{{rule}} {{decision}}"}}},
		{title: "Decision latency, p99 by rule", kind: "timeseries", unit: "s",
			description: "Time a rule takes to decide, without reading the request or writing the answer.",
			exprs:       []legendExpr{{fmt.Sprintf(`histogram_quantile(0.99, sum by (le, rule) (rate(steward_decision_duration_seconds_bucket{%s}[$__rate_interval])))`, sel), "{{rule}}"}}},
		{title: "Webhook request latency, p99 by path", kind: "timeseries", unit: "s",
			description: "The whole HTTP exchange as Steward sees it, per webhook path.",
			exprs:       []legendExpr{{fmt.Sprintf(`histogram_quantile(0.99, sum by (le, webhook) (rate(controller_runtime_webhook_latency_seconds_bucket{%s}[$__rate_interval])))`, sel), "{{webhook}}"}}},
		{title: "API server calls to Steward that failed", kind: "timeseries", unit: "reqps",
			description: "Calls the API server could not complete (timeouts, TLS, connection); with failurePolicy Fail each is a refused write.",
			exprs: []legendExpr{
				{fmt.Sprintf(`sum by (name) (rate(apiserver_admission_webhook_rejection_count{%s,error_type!="no_error"}[$__rate_interval]))`, webhookNames), "{{name}} refused"},
				{fmt.Sprintf(`sum by (name) (rate(apiserver_admission_webhook_fail_open_count{%s}[$__rate_interval]))`, webhookNames), "{{name}} let through"},
			}},
		watchedKindsPanel(sel),
		{title: "Memory", kind: "timeseries", unit: "bytes",
			description: "Resident memory against the memory that requests in flight hold.",
			exprs: []legendExpr{
				{fmt.Sprintf(`process_resident_memory_bytes{%s}`, sel), "{{pod}} resident"},
				{fmt.Sprintf(`steward_request_memory_inflight_bytes{%s}`, sel), "{{pod}} requests in flight"},
			}},
		{title: "Requests refused for memory", kind: "timeseries", unit: "reqps",
			description: "Requests answered 429 before being read because the request memory budget was spent.",
			exprs:       []legendExpr{{fmt.Sprintf(`sum by (pod) (rate(steward_requests_refused_for_memory_total{%s}[$__rate_interval]))`, sel), "{{pod}}"}}},
		{title: "Serving certificate expires in", kind: "stat", unit: "s",
			description: "Time left on the certificate each replica serves; alerts fire under 14 and 2 days.",
			exprs:       []legendExpr{{fmt.Sprintf(`min by (pod) (steward_serving_certificate_expiry_timestamp_seconds{%s}) - time()`, sel), "{{pod}}"}}},
		{title: "Versions running", kind: "table", unit: "",
			description: "steward_build_info of each replica.",
			exprs:       []legendExpr{{fmt.Sprintf(`steward_build_info{%s}`, sel), ""}}},
	}
	return append(queries, rulePanels(sel)...)
}

// rulePanels are the panels the rules add (rule.Monitored), in the list's order.
func rulePanels(sel string) []dashboardQuery {
	var out []dashboardQuery
	for _, part := range defaultParts() {
		for _, p := range part.monitoring.Panels {
			q := dashboardQuery{title: p.Title, description: p.Description, kind: p.Kind, unit: p.Unit}
			for _, e := range p.Exprs {
				q.exprs = append(q.exprs, legendExpr{fmt.Sprintf(e.Expr, sel), e.Legend})
			}
			out = append(out, q)
		}
	}
	return out
}

// watchedKindsPanel shows the kinds the rules cache, by rule and state:
// the cluster cache's and the ones rules watch themselves.
func watchedKindsPanel(sel string) dashboardQuery {
	q := dashboardQuery{title: "Watched kinds by rule and state", kind: "timeseries", unit: "short",
		description: "Kinds the rules cache: synced, syncing (first list pending, or lists failing), or forbidden by RBAC. The kinds the cluster cache follows are counted once whatever the replicas; others as their rule counts them."}
	for _, p := range defaultParts() {
		if w := p.monitoring.WatchedKinds; w != nil {
			q.exprs = append(q.exprs, legendExpr{fmt.Sprintf(w.Panel, sel), w.Legend})
		}
	}
	q.exprs = append(q.exprs, legendExpr{fmt.Sprintf(`count by (rule, state) (max by (rule, group, resource, state) (steward_watched_kinds{%s}))`, sel), "{{rule}} {{state}}"})
	return q
}

// dashboardJSON renders the dashboard two panels to a row.
func (in install) dashboardJSON() []byte {
	d := dashboard{
		UID: "steward", Title: "Steward", Tags: []string{"steward", "admission"},
		SchemaVersion: 39, Refresh: "30s", Time: timeRange{From: "now-6h", To: "now"},
		Templating: templating{List: []variable{
			{Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus"},
			{Name: "namespace", Label: "Namespace", Type: "query", Datasource: &promDatasource, Refresh: 2,
				Query:   map[string]any{"query": "label_values(steward_build_info, namespace)", "refId": "namespace"},
				Current: map[string]any{"text": in.ns, "value": in.ns}},
		}},
	}
	for i, q := range in.dashboardQueries() {
		p := panel{ID: i + 1, Title: q.title, Description: q.description, Type: q.kind, Datasource: promDatasource,
			GridPos: gridPos{H: 8, W: 12, X: (i % 2) * 12, Y: (i / 2) * 8}, FieldConfig: fieldConfig{Defaults: fieldDefaults{Unit: q.unit}}}
		for j, e := range q.exprs {
			p.Targets = append(p.Targets, target{RefID: string(rune('A' + j)), Expr: e.expr, LegendFormat: e.legend, Instant: q.kind != "timeseries"})
		}
		d.Panels = append(d.Panels, p)
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // plain structs always marshal; a failure is a programming error
	}
	return data
}
