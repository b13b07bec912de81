package certs

import (
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InjectCAFromAnnotation is cert-manager's CA injector annotation: on a
// webhook configuration it names the Certificate whose CA goes into every
// webhook's clientConfig.caBundle.
const InjectCAFromAnnotation = "cert-manager.io/inject-ca-from"

// Lifetimes of the cert-manager issued certificates.
const (
	// CADuration is how long the CA certificate is valid.
	CADuration = 365 * 24 * time.Hour
	// CARenewBefore is how long before expiry cert-manager renews the CA.
	// It is longer than a serving certificate's renewal interval
	// (ServingDuration - ServingRenewBefore), so every serving certificate
	// signed by a CA certificate is renewed, and signed by its successor,
	// before that CA certificate expires.
	CARenewBefore = 90 * 24 * time.Hour
	// ServingDuration is how long a serving certificate is valid.
	ServingDuration = 90 * 24 * time.Hour
	// ServingRenewBefore is how long before expiry cert-manager renews the
	// serving certificate.
	ServingRenewBefore = 30 * 24 * time.Hour
)

// InjectCAAnnotation returns the annotation key and value that make
// cert-manager's CA injector put the CA of Steward's serving certificate in
// namespace into a webhook configuration's caBundle. The manifests put it on
// both the validating and the mutating configuration.
//
// The injector reads ca.crt of the serving Certificate's Secret: the CA
// certificate that signed the certificate the pods serve. Injecting from the
// CA Certificate instead would, after someone reset the CA's key, distrust
// the serving certificate until cert-manager next renewed it.
func InjectCAAnnotation(namespace string) (key, value string) {
	return InjectCAAnnotationFor(namespace, DefaultCertManagerNames())
}

// InjectCAAnnotationFor is InjectCAAnnotation for an install whose
// cert-manager objects are named names.
func InjectCAAnnotationFor(namespace string, names CertManagerNames) (key, value string) {
	return InjectCAFromAnnotation, namespace + "/" + names.ServingCertificate
}

// CertManagerNames name the cert-manager objects of one install.
type CertManagerNames struct {
	SelfSignedIssuer, CACertificate, CAIssuer, ServingCertificate string
}

// DefaultCertManagerNames are the names Steward's manifests use.
func DefaultCertManagerNames() CertManagerNames {
	return CertManagerNames{
		SelfSignedIssuer:   SelfSignedIssuerName,
		CACertificate:      CACertificateName,
		CAIssuer:           CAIssuerName,
		ServingCertificate: ServingCertificateName,
	}
}

// CertManagerNamesFor names the cert-manager objects of an install named
// name (a Helm release's full name) as Steward's are named after
// "steward": name-selfsigned, name-ca and name-serving-cert.
func CertManagerNamesFor(name string) CertManagerNames {
	return CertManagerNames{
		SelfSignedIssuer:   name + "-selfsigned",
		CACertificate:      name + "-ca",
		CAIssuer:           name + "-ca",
		ServingCertificate: name + "-serving-cert",
	}
}

// CertManagerObjects returns the cert-manager objects that issue Steward's
// serving certificate, in the order they depend on each other:
//
//	Issuer steward-selfsigned (selfSigned)
//	  -> Certificate steward-ca (isCA, ECDSA P-256, 1 year, Secret steward-ca)
//	  -> Issuer steward-ca (ca: Secret steward-ca)
//	  -> Certificate steward-serving-cert (the Service's DNS names, Secret secretName)
//
// The CA keeps its private key when cert-manager renews it (rotationPolicy
// Never): the renewed CA certificate has the same subject and key, so the API
// server, whichever of the two it has in its caBundle, verifies serving
// certificates signed by either. The caBundle (injected from the serving
// Secret's ca.crt) and the pods' mounted certificate change at different
// moments when the serving certificate is renewed, and either order works.
// CARenewBefore makes sure the CA certificate in the bundle never expires
// before the serving certificate it signed is renewed. The serving key
// rotates on every renewal.
//
// Every object has its TypeMeta set so that it renders to YAML as is.
func CertManagerObjects(namespace, serviceName, secretName string) []client.Object {
	return CertManagerObjectsNamed(namespace, serviceName, secretName, DefaultCertManagerNames())
}

// CertManagerObjectsNamed is CertManagerObjects with the objects named
// names, so that two installs in one namespace do not share them.
func CertManagerObjectsNamed(namespace, serviceName, secretName string, names CertManagerNames) []client.Object {
	selfSigned := &cmv1.Issuer{
		TypeMeta:   issuerType(),
		ObjectMeta: objectMeta(namespace, names.SelfSignedIssuer),
		Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{
			SelfSigned: &cmv1.SelfSignedIssuer{},
		}},
	}
	ca := &cmv1.Certificate{
		TypeMeta:   certificateType(),
		ObjectMeta: objectMeta(namespace, names.CACertificate),
		Spec: cmv1.CertificateSpec{
			IsCA:        true,
			CommonName:  names.CACertificate,
			SecretName:  names.CACertificate,
			Duration:    &metav1.Duration{Duration: CADuration},
			RenewBefore: &metav1.Duration{Duration: CARenewBefore},
			PrivateKey: &cmv1.CertificatePrivateKey{
				Algorithm:      cmv1.ECDSAKeyAlgorithm,
				Size:           256,
				RotationPolicy: cmv1.RotationPolicyNever,
			},
			Usages:    []cmv1.KeyUsage{cmv1.UsageCertSign, cmv1.UsageDigitalSignature},
			IssuerRef: issuerRef(names.SelfSignedIssuer),
		},
	}
	caIssuer := &cmv1.Issuer{
		TypeMeta:   issuerType(),
		ObjectMeta: objectMeta(namespace, names.CAIssuer),
		Spec: cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{
			CA: &cmv1.CAIssuer{SecretName: names.CACertificate},
		}},
	}
	serving := &cmv1.Certificate{
		TypeMeta:   certificateType(),
		ObjectMeta: objectMeta(namespace, names.ServingCertificate),
		Spec: cmv1.CertificateSpec{
			DNSNames:    ServiceDNSNames(namespace, serviceName),
			SecretName:  secretName,
			Duration:    &metav1.Duration{Duration: ServingDuration},
			RenewBefore: &metav1.Duration{Duration: ServingRenewBefore},
			PrivateKey: &cmv1.CertificatePrivateKey{
				Algorithm:      cmv1.ECDSAKeyAlgorithm,
				Size:           256,
				RotationPolicy: cmv1.RotationPolicyAlways,
			},
			Usages:    []cmv1.KeyUsage{cmv1.UsageDigitalSignature, cmv1.UsageServerAuth},
			IssuerRef: issuerRef(names.CAIssuer),
		},
	}
	return []client.Object{selfSigned, ca, caIssuer, serving}
}

func issuerType() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.IssuerKind}
}

func certificateType() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind}
}

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: commonLabels()}
}

func issuerRef(name string) cmmeta.IssuerReference {
	return cmmeta.IssuerReference{Name: name, Kind: cmv1.IssuerKind, Group: "cert-manager.io"}
}
