package rule

// Charted is implemented by a rule whose settings the Helm chart writes
// into matchConditions or refuses to change; the manifests render the
// chart's templates from it. A rule without settings of either kind needs
// none.
type Charted interface {
	Chart() Chart
}

// Chart is what the Helm chart does with a rule's settings.
type Chart struct {
	// Lists are the rule's list settings its webhooks' matchConditions
	// spell out as CEL list literals. The chart writes them from its
	// values, so the identities an install exempts are the ones the API
	// server keeps away from Steward.
	Lists []ChartList
	// Refused are the rule's settings that change what is registered
	// beyond matchConditions (webhook entries, RBAC, caches). The chart
	// refuses any value but the ones it renders, pointing to `steward
	// manifests --config`, rather than install a registration the server
	// does not serve.
	Refused []ChartRefusal
}

// ChartList is a list setting of a rule that a matchCondition holds.
type ChartList struct {
	// Key is the setting's key in the rule's section, e.g. "agentUsers".
	Key string
	// EmptyMeansDefault: the rule's Default replaces an empty list, not
	// only a missing one.
	EmptyMeansDefault bool
	// OmitWhenEmpty: the rule leaves the clause holding the list out of
	// its expression when the list is empty.
	OmitWhenEmpty bool
}

// ChartRefusal is a setting of a rule the Helm chart refuses to change.
type ChartRefusal struct {
	// Key is the setting's key in the rule's section.
	Key string
	// Allowed are the values the chart renders, besides leaving the
	// setting unset.
	Allowed []string
	// InstallName: the setting names the install's webhook
	// configurations, and the chart renders the install's name (a
	// release's full name) only, which it writes into the configuration
	// when the setting is unset. Allowed is then empty.
	InstallName bool
	// Why says what the setting changes, for the chart's refusal.
	Why string
}
