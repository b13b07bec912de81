package webhookserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stewardhq/steward/buildinfo"
	"github.com/stewardhq/steward/certs"
	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/rulessync"
	"github.com/stewardhq/steward/webhooks/serving"
	"github.com/stewardhq/steward/webhooks/setup"
)

// Run runs the manager, with the API server at restCfg, until
// SIGTERM/SIGINT, then shuts down gracefully (shutdownOnSignal): it reports
// unready at once and keeps serving for --shutdown-delay, closing each
// connection after its answer, so the endpoints stop routing here and the
// API server moves to other replicas; then it closes the listener and
// drains requests in flight, and only then stops the rest.
// configData is the configuration file's content cfg was parsed from; the
// file is reloaded when it changes.
func Run(opts Options, restCfg *rest.Config, cfg config.Config, configData []byte, log logr.Logger) error {
	timeout := opts.ShutdownTimeout
	rules := webhooks.Rules(cfg)
	webhookTLS := tlsOptions(opts.EnableHTTP2)
	var clientCAs *clientCAs
	if opts.ClientCAFile != "" {
		clientCAs = newClientCAs(opts.ClientCAFile, log.WithName("client-ca"))
		webhookTLS = append(webhookTLS, clientCAs.configure)
	}
	server := newServer(webhook.Options{
		Host:    opts.Host,
		Port:    opts.Port,
		CertDir: opts.Certs.CertDir,
		TLSOpts: webhookTLS,
	}, log.WithName("webhook-server"))
	inner, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Cache:                  setup.CacheOptions(rules),
		Logger:                 log,
		Metrics:                metricsOptions(opts),
		HealthProbeBindAddress: opts.ProbeAddr,
		// No manager-wide leader election: a manager that cannot renew
		// its Lease exits at once, webhook server and all, without
		// draining. Every part runs on every replica; the background
		// audit elects the replica that audits itself (addAudit).
		LeaderElection:          false,
		PprofBindAddress:        opts.PprofAddr,
		GracefulShutdownTimeout: &timeout,
		WebhookServer:           server,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	mgr := &readinessRecorder{Manager: inner}

	if clientCAs != nil {
		if err := mgr.Add(clientCAs); err != nil {
			return err
		}
	}
	drain := &serving.Drain{}
	if err := addHealthChecks(mgr, drain); err != nil {
		return err
	}
	if opts.CertMode == CertModeSelfManaged {
		ready, err := certs.SetupSelfManaged(mgr, opts.Certs)
		if err != nil {
			return fmt.Errorf("self-managed certificates: %w", err)
		}
		if err := mgr.AddReadyzCheck("certificates", certs.ReadyCheck(ready)); err != nil {
			return err
		}
	}
	limit := serving.NewInflightLimit(opts.RequestMemory, log.WithName("webhook"))
	build := opts.Build
	for _, c := range []prometheus.Collector{limit, buildinfo.Gauge(build), certs.ServingCertificateExpiry(opts.Certs.CertDir)} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	served, recorder, err := registerRules(mgr, opts, cfg, rules, limit, drain, log)
	if err != nil {
		return err
	}
	if opts.ConfigFile != "" {
		if err := addConfigReloader(mgr, opts, configData, cfg, served, recorder, log); err != nil {
			return err
		}
	}
	if err := addAudit(mgr, opts, served, log); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 3)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go shutdownOnSignal(signals, shutdownSteps{Delay: opts.ShutdownDelay, Timeout: opts.ShutdownTimeout, Drain: drain, Server: server, Stop: cancel, Exit: os.Exit}, log)
	collectHarderUntilStarted(ctx, os.Getenv("GOGC"), started(mgr.ready), liveHeap, 200*time.Millisecond, startupGCFor, log)
	log.Info("starting steward", "version", build.Version, "revision", build.Revision, "namespace", opts.Certs.Namespace, "port", opts.Port, "certMode", opts.CertMode, "requestMemory", opts.RequestMemory)
	return mgr.Start(ctx)
}

// registerRules sets up every configured rule and serves each of its webhooks
// at the path its Spec names: the same list renders the webhook configurations.
// What answers at each path follows the configuration (servedRules). The
// rules of entries with DynamicRules are kept by one rulessync.Syncer.
// Decisions are logged as "decision", unreadable requests as "webhook".
// Once drain has begun, every answer closes its connection.
// It returns the served rules and the Events recorder (nil when the
// configuration records no Events).
func registerRules(mgr manager.Manager, opts Options, cfg config.Config, rules []webhooks.Configured, limit *serving.InflightLimit, drain *serving.Drain, log logr.Logger) (*servedRules, func(controller string) serving.EventRecorder, error) {
	cluster, err := setup.WithManagerCache(mgr, rules)
	if err != nil {
		return nil, nil, err
	}
	events, recorder, err := denialEvents(mgr, cfg)
	if err != nil {
		return nil, nil, err
	}
	metrics := serving.NewMetrics()
	if err := ctrlmetrics.Registry.Register(metrics); err != nil {
		return nil, nil, fmt.Errorf("registering the decision metrics: %w", err)
	}
	served := newServedRules(cfg, rules, events, metrics, log.WithName("decision"))
	server := mgr.GetWebhookServer()
	var specs []rule.Spec
	for _, c := range rules {
		spec := c.Rule.Spec()
		specs = append(specs, spec)
		if m, ok := c.Rule.(rule.MetricsCollector); ok {
			if err := ctrlmetrics.Registry.Register(m.Collector()); err != nil {
				return nil, nil, fmt.Errorf("registering the metrics of rule %s: %w", spec.Name, err)
			}
		}
		for _, wh := range spec.Webhooks {
			server.Register(wh.Path, served.table.HTTP(wh.Path, serving.HTTPOptions{Limit: limit, Drain: drain, Log: log.WithName("webhook")}))
		}
	}
	keep, err := registrationOptions(mgr, opts, specs, recorder, drain, log)
	if err != nil {
		return nil, nil, err
	}
	keep.Cache = cluster
	syncer, err := rulessync.Add(mgr, specs, keep)
	served.registration = syncer
	return served, recorder, err
}

// registrationOptions says how Steward keeps its registration: with
// --keep-registration, its two configurations whole (named and pointed at
// as the self-managed mode's flags and --registration-url say), reported
// through the metric, the log and, when Steward records Events, an Event;
// with --leader-elect, only by the replica holding the Lease
// rulessync.LeaseName.
func registrationOptions(mgr manager.Manager, opts Options, specs []rule.Spec, recorderFor func(string) serving.EventRecorder, drain *serving.Drain, log logr.Logger) (rulessync.Options, error) {
	var out rulessync.Options
	if opts.LeaderElect {
		kube, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return out, fmt.Errorf("registration: kubernetes client: %w", err)
		}
		identity, err := audit.Identity()
		if err != nil {
			return out, err
		}
		election, err := audit.NewLeaseElection(kube.CoordinationV1(), opts.Certs.Namespace, rulessync.LeaseName, identity, audit.DefaultTimings())
		if err != nil {
			return out, err
		}
		elog := log.WithName("registration").WithName("election")
		out.Elect = func(ctx context.Context, lead func(context.Context)) { election.Campaign(ctx, elog, lead) }
	}
	if !opts.KeepRegistration {
		return out, nil
	}
	var events rulessync.EventRecorder
	if recorderFor != nil {
		events = recorderFor("steward.dev/registration")
	}
	out.Reports = rulessync.NewReports(events, log.WithName("registration"))
	if err := ctrlmetrics.Registry.Register(out.Reports); err != nil {
		return out, fmt.Errorf("registering the registration metrics: %w", err)
	}
	var entries []string
	for _, spec := range specs {
		for _, wh := range spec.Webhooks {
			entries = append(entries, wh.Name)
		}
	}
	overrides, err := rulessync.ParseOverrides(opts.RegistrationOverrides, entries)
	if err != nil {
		return out, fmt.Errorf("--registration-overrides: %w", err)
	}
	out.Keep = &rulessync.Registration{
		Overrides:    overrides,
		Validating:   opts.Certs.ValidatingWebhookConfiguration,
		Mutating:     opts.Certs.MutatingWebhookConfiguration,
		Target:       rule.Target{Namespace: opts.Certs.Namespace, Service: opts.Certs.ServiceName, URL: opts.RegistrationURL},
		CAFile:       filepath.Join(opts.Certs.CertDir, "ca.crt"),
		Deployment:   opts.Certs.ServiceName,
		ShuttingDown: drain.Draining,
	}
	return out, nil
}

// denialEvents returns the recorder of Events for service accounts'
// refused writes, run by the manager, and the events recorder it sends
// through, for Steward's other Events; both are nil when the configuration
// records none. Events go through client-go's events.k8s.io/v1
// broadcaster, which counts a repeated Event in its series instead of
// creating another.
func denialEvents(mgr manager.Manager, cfg config.Config) (*serving.DenialEvents, func(controller string) serving.EventRecorder, error) {
	if cfg.RecordEventsFor == config.EventsForNone {
		return nil, nil, nil
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("events client: %w", err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: clientset.EventsV1()})
	recorderFor := func(controller string) serving.EventRecorder {
		return broadcaster.NewRecorder(clientgoscheme.Scheme, controller)
	}
	recorder := serving.NewDenialEvents(recorderFor)
	run := everyReplica(func(ctx context.Context) error {
		if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return fmt.Errorf("starting the events broadcaster: %w", err)
		}
		defer broadcaster.Shutdown()
		return recorder.Start(ctx)
	})
	if err := mgr.Add(run); err != nil {
		return nil, nil, fmt.Errorf("adding the events recorder to the manager: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(recorder); err != nil {
		return nil, nil, fmt.Errorf("registering the events metrics: %w", err)
	}
	return recorder, recorderFor, nil
}

// everyReplica is a manager Runnable that runs on every replica. The
// manager elects no leader, so every Runnable does; saying so keeps it
// true should the manager ever elect one.
type everyReplica func(ctx context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false.
func (everyReplica) NeedLeaderElection() bool { return false }

// addAudit adds the background audit. With --leader-elect it audits only
// on the replica holding the Lease audit.LeaseName in Steward's
// namespace, and only while it holds it; losing the Lease stops the audit
// and nothing else. It is added whatever audit.interval says, so a
// reloaded configuration can turn it on or off, and reads the rules
// served and the audit settings anew every pass.
func addAudit(mgr manager.Manager, opts Options, served *servedRules, log logr.Logger) error {
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("audit: dynamic client: %w", err)
	}
	metrics := audit.NewMetrics()
	if err := ctrlmetrics.Registry.Register(metrics); err != nil {
		return fmt.Errorf("registering the audit metrics: %w", err)
	}
	runner := audit.NewRunner(served.auditCurrent, mgr.GetAPIReader(), audit.NewPublisher(dyn), metrics, log.WithName("audit")).
		ReportTo(served.auditReports)
	if opts.LeaderElect {
		election, err := auditElection(mgr, opts.Certs.Namespace)
		if err != nil {
			return err
		}
		runner.Elect(election)
	}
	if err := mgr.Add(runner); err != nil {
		return fmt.Errorf("adding the audit: %w", err)
	}
	return nil
}

// auditElection campaigns for the Lease audit.LeaseName in namespace,
// through the manager's connections to the API server.
func auditElection(mgr manager.Manager, namespace string) (*audit.Election, error) {
	kube, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("audit: kubernetes client: %w", err)
	}
	identity, err := audit.Identity()
	if err != nil {
		return nil, err
	}
	return audit.NewElection(kube.CoordinationV1(), namespace, identity, audit.DefaultTimings())
}

// addConfigReloader makes the manager reload the configuration file when
// it changes, with its metrics registered and its Events recorded on
// Steward's Pod ($POD_NAME, $POD_UID) when Steward records Events.
func addConfigReloader(mgr manager.Manager, opts Options, data []byte, cfg config.Config, served *servedRules, recorderFor func(string) serving.EventRecorder, log logr.Logger) error {
	metrics := newReloadMetrics()
	if err := ctrlmetrics.Registry.Register(metrics); err != nil {
		return fmt.Errorf("registering the configuration reload metrics: %w", err)
	}
	var recorder serving.EventRecorder
	if recorderFor != nil {
		recorder = recorderFor("steward.dev/config")
	}
	events := newConfigEvents(recorder, opts.Certs.Namespace, os.Getenv("POD_NAME"), os.Getenv("POD_UID"))
	reloader := newConfigReloader(opts.ConfigFile, data, cfg, served, metrics, events, log.WithName("config"))
	if err := mgr.Add(reloader); err != nil {
		return fmt.Errorf("adding the configuration reloader: %w", err)
	}
	return nil
}

// addHealthChecks makes /readyz pass only once the webhook server accepts
// TLS connections, every informer cache has synced, and no shutdown began
// (drain).
func addHealthChecks(mgr manager.Manager, drain *serving.Drain) error {
	checks := map[string]healthz.Checker{
		"webhook-server": mgr.GetWebhookServer().StartedChecker(),
		"informer-caches": func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return errors.New("informer caches have not synced")
			}
			return nil
		},
		"shutdown": func(*http.Request) error {
			if drain.Draining() {
				return errors.New("shutting down")
			}
			return nil
		},
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("adding readiness check %s: %w", name, err)
		}
	}
	return mgr.AddHealthzCheck("ping", healthz.Ping)
}

// metricsOptions serves /metrics over HTTPS, to clients the API server
// authenticates and authorizes (metricsAuthFilter: a TokenReview and a
// SubjectAccessReview, each cached for minutes), with the webhook's TLS
// settings and a self-signed certificate, as the kube-controller-manager
// does. Prometheus scrapes it with its service account's token and a
// ClusterRole allowing get on /metrics (steward-metrics-reader).
func metricsOptions(opts Options) metricsserver.Options {
	if !opts.MetricsSecure {
		return metricsserver.Options{BindAddress: opts.MetricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    opts.MetricsAddr,
		SecureServing:  true,
		FilterProvider: metricsAuthFilter,
		TLSOpts:        tlsOptions(opts.EnableHTTP2),
	}
}
