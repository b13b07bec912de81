package audit

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/config"
)

// ReportAPI is one API the audit writes its reports to: a namespaced
// kind, one report per namespace with findings, and a cluster-scoped kind
// for cluster-scoped objects. Both APIs hold the same results (the
// OpenReports API is the wg-policy PolicyReport API moved to its own
// group), so one writer serves both.
type ReportAPI struct {
	// Name is the API's group/version, as audit.reportAPIs names it.
	Name                        string
	Namespaced, Cluster         schema.GroupVersionResource
	NamespacedKind, ClusterKind string
	// TopLevelSource: the report itself names its source, besides each
	// result (OpenReports' Report.source).
	TopLevelSource bool
}

// PolicyReportAPI is wgpolicyk8s.io/v1alpha2.
func PolicyReportAPI() ReportAPI {
	return ReportAPI{Name: config.ReportAPIPolicyReport,
		Namespaced:     schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"},
		Cluster:        schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"},
		NamespacedKind: "PolicyReport", ClusterKind: "ClusterPolicyReport"}
}

// OpenReportsAPI is openreports.io/v1alpha1.
func OpenReportsAPI() ReportAPI {
	return ReportAPI{Name: config.ReportAPIOpenReports,
		Namespaced:     schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"},
		Cluster:        schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"},
		NamespacedKind: "Report", ClusterKind: "ClusterReport", TopLevelSource: true}
}

// ReportAPIs are the report APIs of names (audit.reportAPIs), in that
// order; unknown names are skipped (the configuration refuses them).
func ReportAPIs(names []string) []ReportAPI {
	var out []ReportAPI
	for _, n := range names {
		for _, api := range []ReportAPI{PolicyReportAPI(), OpenReportsAPI()} {
			if api.Name == n {
				out = append(out, api)
			}
		}
	}
	return out
}

// resource is the kind a report of namespace ns ("" for cluster-scoped
// objects) is.
func (a ReportAPI) resource(ns string) (schema.GroupVersionResource, string) {
	if ns == "" {
		return a.Cluster, a.ClusterKind
	}
	return a.Namespaced, a.NamespacedKind
}
