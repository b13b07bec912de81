package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/stewardhq/steward/certs"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/rulessync"
	"github.com/stewardhq/steward/webhooks/webhookserver"
)

// Certificate modes of `steward serve` (--cert-mode).
const (
	// certModeFiles serves the key pair found in --cert-dir, typically the
	// Secret cert-manager fills, mounted into the pod.
	certModeFiles = webhookserver.CertModeFiles
	// certModeSelfManaged makes Steward create its own CA and serving
	// certificate in a Secret and inject the CA into its webhook configurations.
	certModeSelfManaged = webhookserver.CertModeSelfManaged
)

// serveOptions are the flags of `steward serve`.
type serveOptions struct {
	configFile    string
	kubeconfig    string
	host          string
	port          int
	certMode      string
	certs         certs.SelfManagedOptions // namespace, cert dir, and the self-managed mode's settings
	clientCAFile  string
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	pprofAddr     string
	memoryLimit   string // the container's memory limit (webhookserver.ParseMemoryLimit)
	requestMemory string // the memory request bodies in flight may hold (webhookserver.ParseRequestMemory)
	logLevel      string
	enableHTTP2   bool
	leaderElect   bool
	// keepRegistration and registrationURL: see webhookserver.Options.
	keepRegistration      bool
	registrationURL       string
	registrationOverrides string
	shutdownDelay         time.Duration
	shutdownTimeout       time.Duration
}

const serveUsageText = `Usage: steward serve [flags]

Runs the admission webhook server: every rule at its own path, its caches,
and (with --cert-mode=self-managed) its own CA and serving certificate.
It serves until SIGTERM or SIGINT, then drains. Invalid flags or an invalid
--config are refused at start-up with a message naming the field. The
--config file is read again every 10 seconds: a valid change takes effect
without a restart; an invalid one is refused (logged, with an Event on
Steward's Pod) and the last good configuration kept. One replica, the one
holding the Lease steward-leader (--leader-elect), also runs the background
audit every audit.interval and publishes its findings as PolicyReports; a
replica that loses the Lease stops auditing and goes on serving webhooks.

Examples:
  # In the cluster, as the shipped Deployment runs it (cert-manager mode):
  steward serve --config=/etc/steward/config.yaml --cert-dir=/tmp/k8s-webhook-server/serving-certs

  # Without cert-manager: Steward creates, injects and rotates its own CA
  # and serving certificate in the Secret steward-serving-cert.
  steward serve --config=/etc/steward/config.yaml --cert-mode=self-managed \
    --cert-secret=steward-serving-cert --service-name=steward

  # Against a local API server, metrics on loopback without authentication:
  steward serve --kubeconfig=$HOME/.kube/config --metrics-secure=false --metrics-bind-address=127.0.0.1:8080
`

// defaultServeOptions are the defaults that do not come from a flag's
// definition: the self-managed mode's settings and the namespace the pod
// runs in.
func defaultServeOptions() serveOptions {
	o := serveOptions{certs: certs.DefaultSelfManagedOptions()}
	o.certs.Namespace = envOr("POD_NAMESPACE", o.certs.Namespace)
	return o
}

// parseServeFlags parses and validates serve's flags; the error is a bad
// flag, or every invalid value (joined).
func parseServeFlags(args []string) (serveOptions, error) {
	o := defaultServeOptions()
	fs := serveFlagSet(&o, io.Discard)
	if err := parseQuietly(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, unexpectedArguments(fs.Args())
	}
	return o, o.validate()
}

// serveFlagSet binds `steward serve`'s flags to o; o's certificate settings
// are their defaults.
func serveFlagSet(o *serveOptions, out io.Writer) *flag.FlagSet {
	fs := newFlagSet("serve", serveUsageText, out)
	fs.StringVar(&o.configFile, "config", "", "path of a StewardConfiguration YAML file, reloaded when it changes; defaults apply when empty")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server; in-cluster config or $KUBECONFIG when empty")
	fs.StringVar(&o.host, "host", "", "address the webhook server listens on (all when empty)")
	fs.IntVar(&o.port, "port", 9443, "port the webhook server listens on")
	fs.StringVar(&o.certMode, "cert-mode", certModeFiles, "files (serve the key pair in --cert-dir, e.g. from cert-manager) or self-managed (Steward creates, injects and rotates its own CA)")
	o.certs.AddFlags(fs)
	fs.StringVar(&o.clientCAFile, "client-ca-file", "", "when set, only clients (the API server) presenting a certificate signed by this CA are served")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "address of the Prometheus metrics endpoint; 0 disables it")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the API server authenticates (bearer token) and authorizes (get on the non-resource URL /metrics); false serves plain HTTP and needs a loopback --metrics-bind-address")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "address of the pprof endpoint; off when empty")
	fs.StringVar(&o.memoryLimit, "memory-limit", os.Getenv("MEMORY_LIMIT"), "the container's memory limit (a quantity such as 256Mi, or bytes; $MEMORY_LIMIT by default); Steward sets Go's soft memory limit to 90% of it unless GOMEMLIMIT is set")
	fs.StringVar(&o.requestMemory, "request-memory", "", "memory the webhook requests being read and decided may hold, counted as 3x their bodies (a third of it kept for reviews up to 256Ki); a request that does not fit is answered 429 at once; 3/8 of --memory-limit by default, or 96Mi")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, error, or a verbosity number (1 logs every allowed request)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect one replica, through the Lease "+audit.LeaseName+" in --namespace, to run the background audit and write its PolicyReports, and one, through the Lease "+rulessync.LeaseName+", to keep the webhook configurations (--keep-registration and the rules that follow the cluster); every replica serves webhooks either way, and one that loses a Lease stops that task until it holds it again. false: this replica does both unconditionally (one replica, or a local run)")
	fs.BoolVar(&o.keepRegistration, "keep-registration", false, "keep the webhook configurations named by --webhook-config-name as the configuration renders them (entries, rules, selectors, matchConditions, failure policies, timeouts, the Service --service-name in --namespace): a change or a deletion is put back within seconds and reported (metric steward_registration_repairs_total, an Event, a log line); not while --namespace or the Deployment named --service-name is being deleted. The shipped manifests set it")
	fs.StringVar(&o.registrationOverrides, "registration-overrides", "", `with --keep-registration: what the install changed in webhook entries, kept as well: a JSON object by entry name of failurePolicy, timeoutSeconds, and namespaceSelector and objectSelector matchExpressions added to the entry's (the Helm chart passes its webhooks value), e.g. {"fluxguard.steward.dev":{"timeoutSeconds":5}}`)
	fs.StringVar(&o.registrationURL, "registration-url", "", "with --keep-registration: the API server reaches Steward at this https:// URL (each webhook adds its path) instead of the Service --service-name, e.g. when Steward runs outside the cluster")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "serve HTTP/2; off by default because of HTTP/2 rapid reset (CVE-2023-44487)")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 5*time.Second, "on SIGTERM, keep serving this long, reporting unready and closing each connection after its answer, so endpoints stop routing here and the API server moves to other replicas; after it the listener closes and open connections get as long again to carry a last call")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 25*time.Second, "after the delay, how long the drain (open connections' last calls, requests in flight) may take")
	return fs
}

// validate refuses values that cannot work, naming the flag.
func (o serveOptions) validate() error {
	var errs []error
	if o.port < 1 || o.port > 65535 {
		errs = append(errs, fmt.Errorf("--port: %d is not a TCP port (1-65535)", o.port))
	}
	if o.certMode != certModeFiles && o.certMode != certModeSelfManaged {
		errs = append(errs, fmt.Errorf("--cert-mode: %q is not one of %s, %s", o.certMode, certModeFiles, certModeSelfManaged))
	}
	switch {
	case o.certMode == certModeSelfManaged:
		errs = append(errs, o.certs.Validate()) // covers --cert-dir and --namespace
	case o.certs.CertDir == "":
		errs = append(errs, errors.New("--cert-dir: must not be empty"))
	case o.certs.Namespace == "":
		errs = append(errs, errors.New("--namespace: must not be empty"))
	}
	if _, err := webhookserver.ParseLogLevel(o.logLevel); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	for flagName, addr := range map[string]string{"--metrics-bind-address": o.metricsAddr, "--health-probe-bind-address": o.probeAddr, "--pprof-bind-address": o.pprofAddr} {
		if addr == "" || addr == "0" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flagName, err))
		}
	}
	if !o.metricsSecure && o.metricsAddr != "0" && !loopback(o.metricsAddr) {
		errs = append(errs, fmt.Errorf("--metrics-secure=false serves metrics to anyone without authentication, so it needs a loopback --metrics-bind-address such as 127.0.0.1:8080, not %q", o.metricsAddr))
	}
	if limit, err := webhookserver.ParseMemoryLimit(o.memoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--memory-limit: %w", err))
	} else if _, err := webhookserver.ParseRequestMemory(o.requestMemory, limit); err != nil {
		errs = append(errs, fmt.Errorf("--request-memory: %w", err))
	}
	if o.shutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay: %s is negative", o.shutdownDelay))
	}
	if o.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout: %s must be positive", o.shutdownTimeout))
	}
	if o.registrationURL != "" {
		if u, err := url.Parse(o.registrationURL); err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("--registration-url: %q is not an https://host[:port] URL without path, query or fragment", o.registrationURL))
		}
	}
	if o.clientCAFile != "" {
		if _, err := os.Stat(o.clientCAFile); err != nil {
			errs = append(errs, fmt.Errorf("--client-ca-file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// server is what the server runs with: o, and requestMemory, the bytes
// --request-memory parsed into.
func (o serveOptions) server(requestMemory int64) webhookserver.Options {
	return webhookserver.Options{
		ConfigFile: o.configFile, Host: o.host, Port: o.port, CertMode: o.certMode, Certs: o.certs,
		ClientCAFile: o.clientCAFile, MetricsAddr: o.metricsAddr, MetricsSecure: o.metricsSecure,
		ProbeAddr: o.probeAddr, PprofAddr: o.pprofAddr, RequestMemory: requestMemory, EnableHTTP2: o.enableHTTP2,
		LeaderElect: o.leaderElect, KeepRegistration: o.keepRegistration, RegistrationURL: o.registrationURL,
		RegistrationOverrides: o.registrationOverrides, ShutdownDelay: o.shutdownDelay, ShutdownTimeout: o.shutdownTimeout,
		Build: currentBuild(),
	}
}

// loopback says whether addr binds only to a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
