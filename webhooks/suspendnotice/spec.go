package suspendnotice

import (
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Spec registers two mutating webhooks: writes to Flux objects that suspend
// or resume them, and events from Flux controllers that announce a next
// run. matchConditions narrow both inside the API server, so the bulk of
// Flux's own writes and of all events never reach Steward.
func (r *Rule) Spec() rule.Spec {
	groups, resources := groupedResources()
	var objectRules []admissionregistrationv1.RuleWithOperations
	for _, g := range groups {
		objectRules = append(objectRules, rule.Resources(
			rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update),
			[]string{g}, []string{"*"}, resources[g], admissionregistrationv1.NamespacedScope))
	}
	eventOps := rule.Operations(admissionregistrationv1.Create, admissionregistrationv1.Update)
	return rule.Spec{
		Name: Name,
		Type: rule.Mutating,
		RBAC: RBAC(),
		// The controllers are the events webhook's matchCondition;
		// Default fills an empty list.
		Webhooks: []rule.Webhook{
			{
				Name:                rule.WebhookName(Name, ""),
				Path:                rule.Path(rule.Mutating, Name, ""),
				Rules:               objectRules,
				FailurePolicy:       admissionregistrationv1.Ignore,
				FailurePolicyReason: "The suspension record and warning are a notice; suspending or resuming must never depend on Steward being up.",
				TimeoutSeconds:      2,
				MatchPolicy:         admissionregistrationv1.Equivalent,
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{Name: "suspend-or-record-changed", Expression: suspendOrRecordChanged},
				},
			},
			{
				Name: rule.WebhookName(Name, "events"),
				Path: rule.Path(rule.Mutating, Name, "events"),
				Rules: []admissionregistrationv1.RuleWithOperations{
					rule.Resources(eventOps, []string{""}, []string{"v1"}, []string{"events"}, admissionregistrationv1.NamespacedScope),
					rule.Resources(eventOps, []string{"events.k8s.io"}, []string{"v1"}, []string{"events"}, admissionregistrationv1.NamespacedScope),
				},
				FailurePolicy:       admissionregistrationv1.Ignore,
				FailurePolicyReason: "Events are high volume and informational; an event must be stored, rewritten or not, whether or not Steward answers.",
				TimeoutSeconds:      1,
				// Each API version is matched as written: the two kinds of
				// event carry the controller and message in different fields.
				MatchPolicy: admissionregistrationv1.Exact,
				MatchConditions: []admissionregistrationv1.MatchCondition{
					{Name: "from-flux-controller", Expression: fromController(r.cfg.Controllers)},
					{Name: "announces-next-run", Expression: announcesNextRun},
				},
			},
		},
	}
}

// The CEL below guards every field with has(): an error in a match
// condition applies the failure policy, and objects may lack any field.
var (
	suspendOrRecordChanged = "request.operation == 'CREATE' ? " +
		"(" + suspended("object") + " || " + hasRecord("object") + ") : " +
		"(" + suspended("object") + " != " + suspended("oldObject") +
		" || " + annotation("object", AnnotationSuspendedBy) + " != " + annotation("oldObject", AnnotationSuspendedBy) +
		" || " + annotation("object", AnnotationSuspendedAt) + " != " + annotation("oldObject", AnnotationSuspendedAt) + ")"

	announcesNextRun = "request.resource.group == '' ? " +
		"(has(object.message) && " + containsAnnouncement("object.message") + ") : " +
		"(has(object.note) && " + containsAnnouncement("object.note") + ")"
)

// containsAnnouncement is CEL saying field announces a next run, in any of
// the words Flux controllers use.
func containsAnnouncement(field string) string {
	var parts []string
	for _, verb := range announcements {
		parts = append(parts, field+".contains('next "+verb+" in')")
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

func suspended(obj string) string {
	return "(has(" + obj + ".spec) && has(" + obj + ".spec.suspend) && " + obj + ".spec.suspend == true)"
}

func hasRecord(obj string) string {
	return "(has(" + obj + ".metadata.annotations) && (" +
		strconv.Quote(AnnotationSuspendedBy) + " in " + obj + ".metadata.annotations || " +
		strconv.Quote(AnnotationSuspendedAt) + " in " + obj + ".metadata.annotations))"
}

func annotation(obj, key string) string {
	return "(has(" + obj + ".metadata.annotations) && " + strconv.Quote(key) + " in " + obj + ".metadata.annotations ? " +
		obj + ".metadata.annotations[" + strconv.Quote(key) + "] : '')"
}

// fromController narrows events to the configured controllers: core/v1
// events name them in source.component or reportingComponent,
// events.k8s.io/v1 events in reportingController.
func fromController(controllers []string) string {
	list := celList(controllers)
	return "request.resource.group == '' ? " +
		"((has(object.source) && has(object.source.component) && object.source.component in " + list + ") || " +
		"(has(object.reportingComponent) && object.reportingComponent in " + list + ")) : " +
		"(has(object.reportingController) && object.reportingController in " + list + ")"
}

// celList renders strings as a CEL list literal; Go's quoting is valid CEL
// string syntax.
func celList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// Chart is what the Helm chart does with suspendnotice's settings.
func (*Rule) Chart() rule.Chart {
	return rule.Chart{
		Lists: []rule.ChartList{{Key: "controllers", EmptyMeansDefault: true}},
	}
}

// Monitoring is suspendnotice's part of Steward's alerts and dashboard.
func (*Rule) Monitoring() rule.Monitoring {
	return rule.Monitoring{Unsynced: "suspendnotice leaves the kind's Events untouched"}
}
