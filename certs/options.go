package certs

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Flag names of the self-managed certificate settings. Validate names them in
// its errors, so `steward serve` refuses a bad value at start-up with the flag
// to fix.
const (
	FlagNamespace         = "namespace"
	FlagSecret            = "cert-secret"
	FlagServiceName       = "service-name"
	FlagCertDir           = "cert-dir"
	FlagDNSName           = "cert-dns-name"
	FlagWebhookConfigName = "webhook-config-name"
	FlagCAValidity        = "cert-ca-validity"
	FlagCertValidity      = "cert-validity"
	FlagRenewBefore       = "cert-renew-before"
	FlagCheckInterval     = "cert-check-interval"
	FlagPropagationDelay  = "cert-propagation-delay"
)

// Default lifetimes in self-managed mode.
const (
	DefaultCAValidity       = 365 * 24 * time.Hour
	DefaultCertValidity     = 90 * 24 * time.Hour
	DefaultRenewBefore      = 30 * 24 * time.Hour
	DefaultCheckInterval    = time.Hour
	DefaultPropagationDelay = 10 * time.Second
)

// SelfManagedOptions configure self-managed certificates. Every field is a
// command-line flag of `steward serve` (see AddFlags); the manifests and RBAC
// rules are rendered from DefaultSelfManagedOptions, so the defaults are the
// names the shipped objects use.
type SelfManagedOptions struct {
	// Namespace is Steward's namespace, where the Secret lives.
	Namespace string
	// SecretName is the Secret holding ca.crt, ca.key, tls.crt and tls.key.
	// It must exist (the manifests ship it empty): Steward only updates it,
	// so it needs no permission to create Secrets.
	SecretName string
	// ServiceName is the Service in front of Steward; the serving
	// certificate is issued for its DNS names (see ServiceDNSNames).
	ServiceName string
	// CertDir is the directory the webhook server reads tls.crt and tls.key
	// from. Steward writes it, so it must be writable (an emptyDir).
	CertDir string
	// ExtraDNSNames are added to the serving certificate, for example
	// "localhost" when the API server calls Steward by URL.
	ExtraDNSNames []string
	// ValidatingWebhookConfiguration and MutatingWebhookConfiguration are
	// the configurations whose webhooks get the CA bundle.
	ValidatingWebhookConfiguration string
	MutatingWebhookConfiguration   string
	// CAValidity is the lifetime of a new CA certificate.
	CAValidity time.Duration
	// CertValidity is the lifetime of a new serving certificate.
	CertValidity time.Duration
	// RenewBefore is how long before expiry the CA or the serving
	// certificate is replaced.
	RenewBefore time.Duration
	// CheckInterval is how often expiry is checked (changes to the Secret
	// or the webhook configurations are acted on at once).
	CheckInterval time.Duration
	// PropagationDelay is how long a new CA must have been in the webhook
	// configurations before this replica serves a certificate it signed,
	// so that every API server has seen the new bundle first.
	PropagationDelay time.Duration
}

// DefaultSelfManagedOptions returns the settings the manifests ship.
func DefaultSelfManagedOptions() SelfManagedOptions {
	return SelfManagedOptions{
		Namespace:                      DefaultNamespace,
		SecretName:                     DefaultSecretName,
		ServiceName:                    DefaultServiceName,
		CertDir:                        "/tmp/k8s-webhook-server/serving-certs",
		ValidatingWebhookConfiguration: DefaultWebhookConfigurationName,
		MutatingWebhookConfiguration:   DefaultWebhookConfigurationName,
		CAValidity:                     DefaultCAValidity,
		CertValidity:                   DefaultCertValidity,
		RenewBefore:                    DefaultRenewBefore,
		CheckInterval:                  DefaultCheckInterval,
		PropagationDelay:               DefaultPropagationDelay,
	}
}

// AddFlags binds the options to fs, with o's current values as defaults.
// The serve command may bind some of these flags itself (namespace,
// cert-dir) and copy them in; the names above are the contract.
func (o *SelfManagedOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Namespace, FlagNamespace, o.Namespace, "Steward's own namespace")
	fs.StringVar(&o.SecretName, FlagSecret, o.SecretName, "self-managed mode: Secret (in --namespace) holding the CA and serving certificate; it must exist, Steward fills it")
	fs.StringVar(&o.ServiceName, FlagServiceName, o.ServiceName, "Service in front of Steward; the serving certificate is issued for its DNS names")
	fs.StringVar(&o.CertDir, FlagCertDir, o.CertDir, "directory with tls.crt and tls.key, reloaded when the files change; self-managed mode writes it")
	fs.Func(FlagDNSName, "self-managed mode: extra DNS name for the serving certificate (repeatable)", func(s string) error {
		o.ExtraDNSNames = append(o.ExtraDNSNames, s)
		return nil
	})
	fs.Func(FlagWebhookConfigName, "self-managed mode: name of the validating and mutating webhook configurations to inject the CA bundle into (default "+o.ValidatingWebhookConfiguration+")", func(s string) error {
		o.ValidatingWebhookConfiguration, o.MutatingWebhookConfiguration = s, s
		return nil
	})
	fs.DurationVar(&o.CAValidity, FlagCAValidity, o.CAValidity, "self-managed mode: lifetime of a new CA certificate")
	fs.DurationVar(&o.CertValidity, FlagCertValidity, o.CertValidity, "self-managed mode: lifetime of a new serving certificate")
	fs.DurationVar(&o.RenewBefore, FlagRenewBefore, o.RenewBefore, "self-managed mode: replace the CA or serving certificate this long before it expires")
	fs.DurationVar(&o.CheckInterval, FlagCheckInterval, o.CheckInterval, "self-managed mode: how often certificate expiry is checked")
	fs.DurationVar(&o.PropagationDelay, FlagPropagationDelay, o.PropagationDelay, "self-managed mode: how long a new CA must be in the webhook configurations before a certificate it signed is served")
}

// Validate refuses settings that cannot work, naming the flag to fix. The
// lifetime rules keep rotation sound: a CA replaced RenewBefore its expiry
// has expired before its successor is replaced (so the bundle holds at most
// the current and the previous CA), and every certificate is checked at
// least twice inside its renewal window.
func (o SelfManagedOptions) Validate() error {
	var errs []error
	flagErr := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	name := func(flag, value string, check func(string) []string) {
		if value == "" {
			flagErr(flag, "must not be empty")
			return
		}
		if problems := check(value); len(problems) > 0 {
			flagErr(flag, "%q is not a valid name: %s", value, strings.Join(problems, "; "))
		}
	}
	name(FlagNamespace, o.Namespace, validation.IsDNS1123Label)
	name(FlagSecret, o.SecretName, validation.IsDNS1123Subdomain)
	name(FlagServiceName, o.ServiceName, validation.IsDNS1035Label)
	name(FlagWebhookConfigName, o.ValidatingWebhookConfiguration, validation.IsDNS1123Subdomain)
	if o.MutatingWebhookConfiguration != o.ValidatingWebhookConfiguration {
		name(FlagWebhookConfigName, o.MutatingWebhookConfiguration, validation.IsDNS1123Subdomain)
	}
	if o.CertDir == "" {
		flagErr(FlagCertDir, "must not be empty")
	}
	for _, n := range o.ExtraDNSNames {
		if problems := validation.IsDNS1123Subdomain(n); len(problems) > 0 {
			flagErr(FlagDNSName, "%q is not a DNS name: %s", n, strings.Join(problems, "; "))
		}
	}
	positive := func(flag string, d time.Duration) bool {
		if d <= 0 {
			flagErr(flag, "must be positive, got %s", d)
			return false
		}
		return true
	}
	ca := positive(FlagCAValidity, o.CAValidity)
	cert := positive(FlagCertValidity, o.CertValidity)
	renew := positive(FlagRenewBefore, o.RenewBefore)
	check := positive(FlagCheckInterval, o.CheckInterval)
	if o.PropagationDelay < 0 {
		flagErr(FlagPropagationDelay, "must not be negative, got %s", o.PropagationDelay)
	}
	if ca && renew && o.CAValidity <= 2*o.RenewBefore {
		flagErr(FlagCAValidity, "%s must be more than twice --%s (%s), so the previous CA expires before the next rotation", o.CAValidity, FlagRenewBefore, o.RenewBefore)
	}
	if cert && renew && o.CertValidity <= o.RenewBefore {
		flagErr(FlagCertValidity, "%s must be longer than --%s (%s), or every check would replace the certificate", o.CertValidity, FlagRenewBefore, o.RenewBefore)
	}
	if renew && check && 2*o.CheckInterval > o.RenewBefore {
		flagErr(FlagCheckInterval, "%s must be at most half of --%s (%s), so expiry is noticed in time", o.CheckInterval, FlagRenewBefore, o.RenewBefore)
	}
	if renew && o.PropagationDelay >= o.RenewBefore {
		flagErr(FlagPropagationDelay, "%s must be shorter than --%s (%s)", o.PropagationDelay, FlagRenewBefore, o.RenewBefore)
	}
	return errors.Join(errs...)
}

// servingDNSNames are the serving certificate's names: the Service's names
// first, then the extras.
func (o SelfManagedOptions) servingDNSNames() []string {
	names := ServiceDNSNames(o.Namespace, o.ServiceName)
	for _, n := range o.ExtraDNSNames {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// rotatorDNSNames splits servingDNSNames the way cert-controller takes them:
// the name it verifies the certificate for (<svc>.<ns>.svc, the one the API
// server uses for a service reference) and the others.
func (o SelfManagedOptions) rotatorDNSNames() (verified string, extra []string) {
	verified = o.ServiceName + "." + o.Namespace + ".svc"
	for _, n := range o.servingDNSNames() {
		if n != verified {
			extra = append(extra, n)
		}
	}
	return verified, extra
}
