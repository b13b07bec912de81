package webhookserver

import (
	"time"

	"github.com/stewardhq/steward/buildinfo"
	"github.com/stewardhq/steward/certs"
)

// Certificate modes of the webhook server.
const (
	// CertModeFiles serves the key pair found in the certificate
	// directory, typically the Secret cert-manager fills, mounted into the
	// pod.
	CertModeFiles = "files"
	// CertModeSelfManaged makes Steward create its own CA and serving
	// certificate in a Secret and inject the CA into its webhook
	// configurations.
	CertModeSelfManaged = "self-managed"
)

// Options are how Run serves: the settings of `steward serve`'s flags,
// validated and parsed.
type Options struct {
	// ConfigFile is the configuration file, reloaded when it changes; ""
	// serves the defaults.
	ConfigFile string
	// Host and Port are where the webhook server listens.
	Host string
	Port int
	// CertMode is CertModeFiles or CertModeSelfManaged.
	CertMode string
	// Certs are the namespace, the certificate directory, and the
	// self-managed mode's settings.
	Certs certs.SelfManagedOptions
	// ClientCAFile, when set, admits only clients presenting a
	// certificate signed by the CA in it, read again when it changes.
	ClientCAFile string
	// MetricsAddr serves /metrics; with MetricsSecure, over HTTPS to
	// clients the API server authenticates and authorizes.
	MetricsAddr   string
	MetricsSecure bool
	// ProbeAddr serves /healthz and /readyz, PprofAddr pprof ("" off).
	ProbeAddr, PprofAddr string
	// RequestMemory is what request bodies in flight may hold, in bytes
	// (serving.InflightLimit; ParseRequestMemory).
	RequestMemory int64
	EnableHTTP2   bool
	// LeaderElect runs the background audit, and keeps the registration,
	// on the replica holding each one's Lease only.
	LeaderElect bool
	// KeepRegistration, RegistrationURL and RegistrationOverrides: see
	// registrationOptions.
	KeepRegistration      bool
	RegistrationURL       string
	RegistrationOverrides string
	// ShutdownDelay and ShutdownTimeout: see shutdownSteps.
	ShutdownDelay, ShutdownTimeout time.Duration
	// Build is the build steward_build_info and the start-up log line
	// report.
	Build buildinfo.Build
}
