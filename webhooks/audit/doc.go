// Package audit is Steward's background audit: it asks the rules that
// implement rule.Auditor what already sits in the cluster in the state
// they exist to prevent, and publishes their findings as
// wgpolicyk8s.io/v1alpha2 PolicyReports, one per namespace and one
// ClusterPolicyReport for cluster-scoped objects, all named "steward",
// with source "steward" and policy = the rule's name.
//
// `steward serve` runs it every audit.interval on the replica holding the
// Lease LeaseName (Runner, Election): only the audit takes part in the
// election, so a replica that loses the Lease stops auditing and keeps
// serving webhooks. `steward audit` runs one pass from the command line
// and prints the findings (Collect and Results serve both).
//
// Reports are written only when their content changes, so an unchanged
// cluster costs one list of Steward's reports per pass and no writes.
// Each holds at most MaxResults results and MaxReportBytes of them,
// failures first; the number left out is in its steward.dev/omitted-results
// annotation. A report whose
// namespace has nothing left to report is deleted. A rule that cannot
// answer a pass (its caches are not synced) keeps the results the
// reports already hold for it.
package audit
