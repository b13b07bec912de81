package certs

// Default object names. The manifests, the serve command's flag defaults and
// the RBAC rules all come from these, so they cannot disagree.
const (
	// DefaultNamespace is Steward's own namespace.
	DefaultNamespace = "steward-system"
	// DefaultServiceName is the Service in front of Steward's pods; the
	// serving certificate is issued for its DNS names.
	DefaultServiceName = "steward"
	// DefaultSecretName is the Secret that holds the serving certificate, in
	// both modes.
	DefaultSecretName = "steward-serving-cert"
	// DefaultWebhookConfigurationName names both the validating and the
	// mutating webhook configuration whose caBundle the CA is injected into.
	DefaultWebhookConfigurationName = "steward"
)

// cert-manager object names. They are fixed rather than configurable: only
// the serving Secret's name is referenced from outside this package.
const (
	// SelfSignedIssuerName is the Issuer that signs the CA certificate.
	SelfSignedIssuerName = "steward-selfsigned"
	// CACertificateName is the CA Certificate; its Secret has the same name.
	CACertificateName = "steward-ca"
	// CAIssuerName is the Issuer that signs serving certificates with the CA.
	CAIssuerName = "steward-ca"
	// ServingCertificateName is the serving Certificate. The CA injector
	// reads the CA from this Certificate's Secret.
	ServingCertificateName = "steward-serving-cert"
)

func commonLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":    "steward",
		"app.kubernetes.io/part-of": "steward",
	}
}

// ServiceDNSNames are the names the API server may use to reach Service
// serviceName in namespace: short, namespaced, the .svc form the API server
// uses for service references, and the fully qualified cluster-local name.
func ServiceDNSNames(namespace, serviceName string) []string {
	return []string{
		serviceName,
		serviceName + "." + namespace,
		serviceName + "." + namespace + ".svc",
		serviceName + "." + namespace + ".svc.cluster.local",
	}
}
