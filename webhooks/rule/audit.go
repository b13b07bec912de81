package rule

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Auditor is implemented by rules that can tell, from what their caches
// already hold, which objects in the cluster are in the state the rule
// exists to prevent: admission sees only writes, and the same problems
// sit in objects nobody is writing. The background audit (steward serve,
// leader only) and `steward audit` call it on rules that are set up and
// synced, and publish the findings as PolicyReports.
//
// Audit reads the rule's caches; api is an uncached reader for what a
// cache cannot answer: a handful of CRDs by name, or, for the GitOps
// guards, which cache owners and never the objects they deploy, the
// metadata of the kinds their owners deployed, listed in pages, only
// kinds the rule's own RBAC grants list on. It returns every finding of
// one pass; an error means the rule could not answer this pass (its cache
// is not synced, nothing could be listed), and the previous findings
// stand.
type Auditor interface {
	Audit(ctx context.Context, api client.Reader) ([]Finding, error)
}

// AuditResult is a finding's verdict, in PolicyReport's words.
type AuditResult string

const (
	// AuditPass: the object was checked and is fine. Rules report passes
	// only where they are few and useful (a CRD ready for the next
	// release), never one per cached object.
	AuditPass AuditResult = "pass"
	// AuditFail: the object is in the state the rule refuses at admission.
	AuditFail AuditResult = "fail"
	// AuditWarn: the object needs a person's attention, though nothing is
	// wrong yet (a suspended object, a slow deletion).
	AuditWarn AuditResult = "warn"
)

// Finding is one audited object's result: one entry of a PolicyReport,
// whose policy is the rule's name.
type Finding struct {
	// Check names the question, the report entry's "rule" field, in
	// kebab-case. Each rule's checks:
	//   apimigration:     stored-versions (a Flux CRD's status.storedVersions
	//                     holds a version the target release no longer
	//                     serves: the API shows no object's stored version,
	//                     and `flux migrate` clears the CRD's list once
	//                     every object is rewritten)
	//   claimguard:       foreground-deletion (a claim or XR deleting in
	//                     Foreground longer than the threshold),
	//                     external-name-collision (live MRs sharing an
	//                     external name)
	//   fleetguard, fluxguard, argocdguard:
	//                     drift (an object the GitOps tool deployed changed
	//                     by another field manager since the tool's last
	//                     write)
	//   installplanguard: installplan-missing, installplan-stuck
	//   suspendnotice:    suspended
	Check  string
	Result AuditResult
	// Object is the object the finding is about; its namespace decides
	// which report holds the finding (none: the ClusterPolicyReport).
	Object corev1.ObjectReference
	// Message says what is wrong and what to do, in the same words as the
	// rule's denials.
	Message string
	// Properties are the details, e.g. "blockedBy", "managers", "fields",
	// "suspendedBy", "suspendedAt"; values are short strings.
	Properties map[string]string
}
