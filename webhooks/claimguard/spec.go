package claimguard

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name.
const Name = "claimguard"

// The suffixes of the rule's webhook entries (see rule.WebhookName). The
// claim/composite entries get their rules at run time (see webhookRules);
// the managed entry is static.
const (
	// createSuffix is the main entry: CREATE of claim and composite
	// resource kinds.
	createSuffix = ""
	// managedSuffix receives CREATE of composed resources that carry an
	// external name, of any kind.
	managedSuffix = "managed"
	// deleteSuffix receives DELETE of claim and composite resource kinds.
	deleteSuffix = "delete"
)

const timeoutSeconds = 2

// Spec describes claimguard's four webhook entries, what it reads, and the
// aggregated ClusterRole through which installers grant it the composite
// and managed kinds.
//
// The create and delete entries are rendered without rules: the claim and
// composite kinds exist only once CompositeResourceDefinitions do, so their
// rules are dynamic (see dynamicRules), applied at run time with
// server-side apply (field manager "steward-claimguard"). Installers must
// not set them.
func (r *Rule) Spec() rule.Spec {
	return rule.Spec{
		Name:            Name,
		Type:            rule.Validating,
		RBAC:            RBAC(),
		AggregatedRoles: []rule.AggregatedRole{{Name: "kinds", Label: AggregationLabel}},
		Webhooks: []rule.Webhook{
			{
				Name:           rule.WebhookName(Name, createSuffix),
				Path:           rule.Path(rule.Validating, Name, createSuffix),
				FailurePolicy:  admissionregistrationv1.Fail,
				TimeoutSeconds: timeoutSeconds,
				FailurePolicyReason: "A claim or composite resource created while its predecessor is still deleting composes resources " +
					"that collide with external resources being destroyed; Crossplane retries failed creates, so an outage " +
					"delays provisioning instead of risking data.",
				MatchPolicy:  admissionregistrationv1.Equivalent,
				DynamicRules: r.dynamicRules(admissionregistrationv1.Create),
			},
			{
				Name:           rule.WebhookName(Name, managedSuffix),
				Path:           rule.Path(rule.Validating, Name, managedSuffix),
				FailurePolicy:  admissionregistrationv1.Fail,
				TimeoutSeconds: timeoutSeconds,
				FailurePolicyReason: "A managed resource created with the external name of one still being deleted adopts or " +
					"recreates the external resource the other is destroying; Crossplane retries composing, so an outage " +
					"delays provisioning instead of risking data.",
				MatchPolicy: admissionregistrationv1.Equivalent,
				Rules: []admissionregistrationv1.RuleWithOperations{
					rule.Resources(rule.Operations(admissionregistrationv1.Create), []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes),
				},
				// Only composed resources carry crossplane.io/composite, so
				// the API server never calls Steward for anything else.
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: labelComposite, Operator: metav1.LabelSelectorOpExists,
				}}},
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{
						Name:       "has-external-name",
						Expression: `has(object.metadata.annotations) && '` + annotationExtName + `' in object.metadata.annotations && object.metadata.annotations['` + annotationExtName + `'] != ''`,
					},
					{Name: "not-leases-or-reviews", Expression: notLeasesOrReviews},
				},
			},
			{
				Name:           rule.WebhookName(Name, deleteSuffix),
				Path:           rule.Path(rule.Validating, Name, deleteSuffix),
				FailurePolicy:  admissionregistrationv1.Ignore,
				TimeoutSeconds: timeoutSeconds,
				FailurePolicyReason: "Deletes are only annotated with warnings (and, with requireForegroundDelete, held to Foreground " +
					"propagation); a Steward outage must never block deletion, garbage collection or namespace cleanup.",
				MatchPolicy:  admissionregistrationv1.Equivalent,
				DynamicRules: r.dynamicRules(admissionregistrationv1.Delete),
			},
			deletingWebhook(),
		},
	}
}

// Chart is what the Helm chart does with claimguard's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		// Both change Steward's own RBAC, which the chart renders once.
		Refused: []rule.ChartRefusal{
			{Key: "manageWebhookRules", Allowed: []string{"true"}, Why: "changes Steward's permission to update its webhook configuration"},
			{Key: "webhookConfigurationName", InstallName: true, Why: "changes which webhook configuration Steward may update"},
		},
	}
}

// Monitoring is claimguard's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{
		Panels: []rule.Panel{{Title: "claimguard cached objects", Kind: "timeseries", Unit: "short",
			Description: "Composite and managed resources in claimguard's caches.",
			Exprs:       []rule.PanelExpr{{Expr: `sum by (role) (steward_claimguard_cached_objects{%[1]s})`, Legend: "{{role}}"}}}},
		// claimguard's kinds are open-ended, so they are counted by
		// role; the alert labels them rule="claimguard" so they read
		// like the cluster cache's.
		WatchedKinds: &rule.WatchedKinds{
			NotSynced: `label_replace(sum by (role, state) (steward_claimguard_watched_kinds{%[1]s,state!="synced"}) > 0, "rule", "claimguard", "", "")`,
			Summary:   "{{ $value }} {{ $labels.role }} kinds claimguard watches are {{ $labels.state }}.",
			Panel:     `sum by (role, state) (steward_claimguard_watched_kinds{%[1]s})`,
			Legend:    "claimguard {{role}} {{state}}",
			Grant:     "Grant claimguard's kinds with a ClusterRole carrying the claimguard aggregation label",
		},
		Unsynced: "claimguard answers requests for the kind with an error or a warning",
	}
}
