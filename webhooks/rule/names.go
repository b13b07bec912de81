package rule

// webhookDomain ends the name of every webhook entry Steward registers.
const webhookDomain = ".steward.dev"

// WebhookName is the name of one of a rule's webhook entries:
// "<rule>.steward.dev" for its main entry (suffix ""), and
// "<rule>-<suffix>.steward.dev" for the others. The API server, the
// failure-policy annotations and denial messages ("admission webhook ...
// denied the request") all show it, so it never changes for an entry.
func WebhookName(rule, suffix string) string {
	if suffix == "" {
		return rule + webhookDomain
	}
	return rule + "-" + suffix + webhookDomain
}

// Path is the URL path the server serves one of a rule's webhook entries
// at: "/validate/<rule>" or "/mutate/<rule>" for its main entry, followed
// by "/<suffix>" for the others. controller-runtime's webhook metrics are
// labelled with it.
func Path(t Type, rule, suffix string) string {
	prefix := "/validate/"
	if t == Mutating {
		prefix = "/mutate/"
	}
	if suffix == "" {
		return prefix + rule
	}
	return prefix + rule + "/" + suffix
}
