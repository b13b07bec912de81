package rule

// Monitored is implemented by a rule with its own part of Steward's alerts
// and Grafana dashboard, which the manifests render. A rule without one
// has only the parts every rule shares.
type Monitored interface {
	Monitoring() Monitoring
}

// Monitoring is a rule's part of Steward's alerts and Grafana dashboard.
// Its PromQL expressions hold %[1]s where the install's label selector
// goes.
type Monitoring struct {
	// Panels are the rule's own dashboard panels, after Steward's.
	Panels []Panel
	// WatchedKinds describes kinds the rule watches itself, outside the
	// cluster cache's steward_watched_kinds, which the alert and panel on
	// watched kinds add; nil when it watches none.
	WatchedKinds *WatchedKinds
	// Unsynced says what the rule does while the cache of a kind it reads
	// has not synced, for the alert on watched kinds; empty when it reads
	// no cached kind.
	Unsynced string
}

// Panel is one dashboard panel.
type Panel struct {
	Title, Description string
	// Kind is the Grafana panel type ("timeseries", "table", "stat"); Unit
	// its unit.
	Kind, Unit string
	Exprs      []PanelExpr
}

// PanelExpr is one query of a panel, and its legend.
type PanelExpr struct {
	Expr, Legend string
}

// WatchedKinds are the series of kinds a rule watches itself.
type WatchedKinds struct {
	// NotSynced is the rule's kinds that have not synced, labelled with
	// the rule's name as rule and carrying no resource label; the
	// alert on watched kinds adds it to its own.
	NotSynced string
	// Summary is the alert's summary for those series.
	Summary string
	// Panel and Legend add them to the panel of watched kinds.
	Panel, Legend string
	// Grant says how to grant the rule's kinds to Steward.
	Grant string
}
