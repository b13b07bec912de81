package gitops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/webhooks/rule"
)

// IdentityClauses keep a tool's own writes and Kubernetes' controllers'
// from ever calling Steward: they cost no webhook round trip, and a
// Steward outage cannot block them. The tool's user names come first:
// its writes are most of what a guard's webhook matches.
func IdentityClauses(agent rule.Identities) []string {
	var clauses []string
	if len(agent.Users) > 0 {
		clauses = append(clauses, fmt.Sprintf("!(request.userInfo.username in %s)", CELList(agent.Users)))
	}
	if len(agent.Groups) > 0 {
		clauses = append(clauses, fmt.Sprintf("(!has(request.userInfo.groups) || !request.userInfo.groups.exists(g, g in %s))", CELList(agent.Groups)))
	}
	return append(clauses, fmt.Sprintf("!(request.userInfo.username in %s) && (!has(request.userInfo.groups) || !(%s in request.userInfo.groups))",
		CELList(kubernetesControllers), strconv.Quote(NodesGroup)))
}

// AllOf joins clauses into the expression of one matchCondition. The API
// server evaluates every condition of a webhook for each request the
// webhook's rules and selectors match; as one expression, evaluation stops
// at the first clause that excludes the request (for the tool's own
// writes, the first), which costs the API server a fraction of evaluating
// separate conditions (see docs/benchmarks.md).
func AllOf(clauses ...string) string {
	return strings.Join(clauses, " &&\n")
}

// ExcludedResources honours Steward's rule never to intercept Leases,
// Events, TokenReviews or SubjectAccessReviews, even if one were labelled.
const ExcludedResources = `!(request.resource.group in ['authentication.k8s.io', 'authorization.k8s.io'] ||
  (request.resource.group == 'coordination.k8s.io' && request.resource.resource == 'leases') ||
  (request.resource.group in ['', 'events.k8s.io'] && request.resource.resource == 'events'))`

// ExcludeStatusKeepingMetadata skips status writes that leave the labels,
// annotations and owner references as they were: all a guard judges in a
// status write, and all that a controller's status update changes.
func ExcludeStatusKeepingMetadata() string {
	return "!(has(request.subResource) && request.subResource == 'status' &&\n  " +
		strings.Join([]string{sameMetadata("labels"), sameMetadata("annotations"), sameMetadata("ownerReferences")}, " &&\n  ") + ")"
}

// sameMetadata is true when object and oldObject have the same
// metadata.<field>, or both lack it.
func sameMetadata(field string) string {
	o, old := "object.metadata."+field, "oldObject.metadata."+field
	return fmt.Sprintf("has(%s) == has(%s) && (!has(%s) || %s == %s)", o, old, o, o, old)
}

// CELList renders strings as a CEL list literal.
func CELList(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
