package manifests

import (
	"bytes"
	_ "embed"
)

// The PolicyReport CRDs (wgpolicyk8s.io, which serve v1alpha2), copied
// unmodified from the policy working group's repository (see
// e2e/upstream/SOURCES.md and refresh.sh).
var (
	//go:embed upstream/wgpolicyk8s.io_policyreports.yaml
	policyReportsCRD []byte
	//go:embed upstream/wgpolicyk8s.io_clusterpolicyreports.yaml
	clusterPolicyReportsCRD []byte
)

// policyReportCRDsDir is the optional kustomize directory holding the
// PolicyReport CRDs the audit writes to: clusters with Kyverno or Policy
// Reporter already have them, and must not install them twice.
const policyReportCRDsDir = "policyreport-crds/"

// policyReportCRDFiles are the files of policyReportCRDsDir.
func policyReportCRDFiles() map[string][]byte {
	files := map[string][]byte{
		policyReportCRDsDir + "policyreports.yaml":        upstreamYAML(policyReportsCRD),
		policyReportCRDsDir + "clusterpolicyreports.yaml": upstreamYAML(clusterPolicyReportsCRD),
	}
	files[policyReportCRDsDir+"kustomization.yaml"] = kustomization([]string{"clusterpolicyreports.yaml", "policyreports.yaml"}, nil)
	return files
}

// upstreamYAML is an upstream file under the generated-file header, as
// it is, less a leading document separator.
func upstreamYAML(data []byte) []byte {
	return append([]byte(header), bytes.TrimPrefix(data, []byte("---\n"))...)
}
