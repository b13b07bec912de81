// Package certs gives Steward's webhook server its TLS certificate in one of
// two ways.
//
// With cert-manager installed, CertManagerObjects builds the Issuer and
// Certificate objects that make cert-manager issue a CA and a serving
// certificate for Steward's Service, and InjectCAAnnotation names the
// annotation that makes cert-manager's CA injector fill in the caBundle of
// Steward's webhook configurations.
//
// Without cert-manager, SetupSelfManaged makes Steward create its own CA and
// serving certificate in a Secret (through open-policy-agent/cert-controller,
// the rotator Gatekeeper uses), rotate them before they expire, inject a CA
// bundle that trusts both the current and the previous CA into its webhook
// configurations, and write the serving certificate into the directory the
// webhook server reloads it from.
package certs
