package manifests

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// webhookNames matches the API server's name label for Steward's webhooks.
const webhookNames = `name=~".+\\.steward\\.dev"`

// alerts are what a platform team pages on: Steward's webhooks fail closed,
// so an unanswered call is a refused write somewhere in the cluster, and a
// certificate that is not renewed makes every call fail at once.
func (in install) alerts() []alert {
	sel := in.scoped()
	return []alert{
		{
			Name:     "StewardDown",
			Expr:     fmt.Sprintf(`sum by (job, namespace) (up{%[1]s}) == 0 or absent(up{%[1]s})`, sel),
			For:      5 * time.Minute,
			Severity: "critical",
			Summary:  "No Steward replica can be scraped.",
			Description: "Prometheus has no Steward replica that answers in " + in.ns + ". Writes to the kinds Steward guards with failurePolicy Fail are refused " +
				"until it is back; the runbook says how to take it off the write path.",
		},
		{
			Name:     "StewardWebhookCallsFailing",
			Expr:     fmt.Sprintf(`sum by (name) (rate(apiserver_admission_webhook_rejection_count{%s,error_type=~"calling_webhook_error|apiserver_internal_error"}[5m])) > 0`, webhookNames),
			For:      5 * time.Minute,
			Severity: "critical",
			Summary:  "The API server cannot get an answer from Steward's webhook {{ $labels.name }}.",
			Description: "Calls to {{ $labels.name }} time out or fail ({{ $value | humanize }}/s): writes it guards with failurePolicy Fail are refused. " +
				"Check Steward's pods, its Service endpoints and its serving certificate.",
		},
		{
			Name:     "StewardWebhookFailingOpen",
			Expr:     fmt.Sprintf(`sum by (name) (rate(apiserver_admission_webhook_fail_open_count{%s}[5m])) > 0`, webhookNames),
			For:      10 * time.Minute,
			Severity: "warning",
			Summary:  "Writes pass Steward's webhook {{ $labels.name }} unjudged.",
			Description: "The API server could not call {{ $labels.name }}, whose failurePolicy is Ignore, and let {{ $value | humanize }} writes/s through " +
				"without Steward's warnings or annotations.",
		},
		{
			Name:        "StewardWebhookErrors",
			Expr:        fmt.Sprintf(`sum by (webhook) (rate(controller_runtime_webhook_requests_total{%s,code=~"5.."}[5m])) > 0`, sel),
			For:         10 * time.Minute,
			Severity:    "warning",
			Summary:     "Steward answers requests to {{ $labels.webhook }} with server errors.",
			Description: "{{ $value | humanize }} requests/s to {{ $labels.webhook }} end in a 5xx answer; Steward's log says why.",
		},
		{
			Name:     "StewardRefusingRequestsForMemory",
			Expr:     fmt.Sprintf(`sum(rate(steward_requests_refused_for_memory_total{%s}[5m])) > 0`, sel),
			For:      10 * time.Minute,
			Severity: "warning",
			Summary:  "Steward refuses admission requests because its request memory budget is spent.",
			Description: "Steward answered {{ $value | humanize }} requests/s with 429 before reading them: a flood of large requests reaches its webhook port, " +
				"or --request-memory is too small for the cluster's objects. Turn on client-certificate authentication or raise the memory limit.",
		},
		{
			Name:     "StewardServingCertificateExpiresSoon",
			Expr:     fmt.Sprintf(`steward_serving_certificate_expiry_timestamp_seconds{%s} - time() < 14 * 86400`, sel),
			For:      time.Hour,
			Severity: "warning",
			Summary:  "Steward's serving certificate expires in less than 14 days.",
			Description: "The certificate {{ $labels.pod }} serves expires in {{ $value | humanizeDuration }}. cert-manager (or Steward's self-managed mode) " +
				"renews it well before; check the Certificate's status or Steward's log.",
		},
		{
			Name:        "StewardServingCertificateExpiresVerySoon",
			Expr:        fmt.Sprintf(`steward_serving_certificate_expiry_timestamp_seconds{%s} - time() < 2 * 86400`, sel),
			For:         10 * time.Minute,
			Severity:    "critical",
			Summary:     "Steward's serving certificate expires in less than 2 days.",
			Description: "When the certificate {{ $labels.pod }} serves expires ({{ $value | humanizeDuration }}), every call to Steward fails and guarded writes are refused.",
		},
		{
			Name:     "StewardConfigReloadFailed",
			Expr:     fmt.Sprintf(`max_over_time(steward_config_last_reload_successful{%s}[5m]) == 0`, sel),
			For:      10 * time.Minute,
			Severity: "warning",
			Summary:  "Steward's replica {{ $labels.pod }} refused its changed configuration file.",
			Description: "{{ $labels.pod }} could not load its configuration file as changed and keeps deciding by the last good configuration, so the change " +
				"has not taken effect. Its log line \"configuration refused\" and the StewardConfigRejected Event on the Pod name the field to fix in the ConfigMap " +
				in.configName() + ".",
		},
		watchedKindsAlert(sel),
		{
			// Every entry's series exists from start-up at 0, so the first
			// repair is an increase too.
			Name:     "StewardRegistrationRepaired",
			Expr:     fmt.Sprintf(`sum by (kind, configuration, entry) (increase(steward_registration_repairs_total{%s}[15m])) > 0`, sel),
			For:      0,
			Severity: "warning",
			Summary:  "Someone changed or deleted Steward's {{ $labels.kind }} {{ $labels.configuration }} (entry {{ $labels.entry }}); Steward put it back.",
			Description: "Steward's registration was weakened or removed ({{ $value | humanize }} repairs of {{ $labels.entry }} in 15m) and Steward restored it; " +
				"until then the writes it guards passed unjudged. The RegistrationRepaired Event on the configuration (kubectl get events -n default " +
				"--field-selector reason=RegistrationRepaired) names the field manager and the fields it changed; the API server's audit log names " +
				"who. To switch a guard off deliberately set its mode to off in the ConfigMap " + in.configName() + "; to take Steward off the write " +
				"path, follow the runbook (scale it to zero first).",
		},
		{
			Name:     "StewardDecisionLatencyHigh",
			Expr:     fmt.Sprintf(`histogram_quantile(0.99, sum by (le, rule) (rate(steward_decision_duration_seconds_bucket{%s}[5m]))) > 0.25`, sel),
			For:      15 * time.Minute,
			Severity: "warning",
			Summary:  "Steward's rule {{ $labels.rule }} takes {{ $value | humanizeDuration }} to decide (p99).",
			Description: "Decisions normally take well under a millisecond; the webhooks time out after 2-3 s. A slow rule usually means its caches " +
				"grew with the cluster or the pod is short of CPU.",
		},
	}
}

// watchedKindsAlert is one alert for every rule's caches: the kinds the
// cluster cache follows (steward_watched_kinds, one series per kind, named
// by rule, group and resource), and the kinds rules watch themselves, as
// their rule.Monitored adds them (rule.WatchedKinds).
func watchedKindsAlert(sel string) alert {
	expr := `max by (rule, group, resource, state) (steward_watched_kinds{%[1]s,state!="synced"}) > 0`
	summary := "{{ if $labels.resource }}The cache of {{ $labels.resource }}.{{ $labels.group }} {{ $labels.rule }} follows is {{ $labels.state }}."
	var unsynced, grants []string
	for _, p := range defaultParts() {
		m := p.monitoring
		if m.Unsynced != "" {
			unsynced = append(unsynced, m.Unsynced)
		}
		if w := m.WatchedKinds; w != nil {
			expr += " or " + w.NotSynced
			summary += "{{ else if eq $labels.rule " + strconv.Quote(p.name) + " }}" + w.Summary
			grants = append(grants, w.Grant)
		}
	}
	description := "\"forbidden\" means Steward's RBAC lacks list/watch on the kind; \"syncing\" that its first list has not completed or its lists keep " +
		"failing (Steward's log says why). Until it syncs, " + listed(unsynced) + "; a cache that synced before keeps answering from what it last saw. "
	if len(grants) > 0 {
		description += strings.Join(grants, "; ") + "; the other rules' kinds are in Steward's own ClusterRole, so re-apply the install. "
	} else {
		description += "The rules' kinds are in Steward's own ClusterRole, so re-apply the install. "
	}
	return alert{
		Name:        "StewardWatchedKindNotSyncing",
		Expr:        fmt.Sprintf(expr, sel),
		For:         15 * time.Minute,
		Severity:    "warning",
		Summary:     summary + "{{ end }}",
		Description: description + "A kind whose CRD is deleted is no longer watched and does not fire.",
	}
}

// listed joins clauses as a sentence does: "a, b and c".
func listed(clauses []string) string {
	switch len(clauses) {
	case 0:
		return "the rules that read it cannot check requests that need it"
	case 1:
		return clauses[0]
	}
	return strings.Join(clauses[:len(clauses)-1], ", ") + ", and " + clauses[len(clauses)-1]
}
