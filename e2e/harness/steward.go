package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultConfig is a configuration file with only its header: every rule
// runs with its defaults (enforce).
const DefaultConfig = `apiVersion: config.steward.dev/v1alpha1
kind: StewardConfiguration
`

// Timeouts of the Steward process.
const (
	// ReadyTimeout bounds the wait for /readyz, which includes the informer
	// caches syncing.
	ReadyTimeout = 60 * time.Second
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	StopTimeout = 30 * time.Second
	// PropagationTimeout bounds the wait for the API server to use newly
	// written webhook configurations.
	PropagationTimeout = 30 * time.Second
)

// StewardOptions say how to run Steward.
type StewardOptions struct {
	// Config is the configuration file's content; no --config flag is
	// passed when it is empty.
	Config string
	// Args are extra `steward serve` flags, after the harness's own, so a
	// flag given here wins (e.g. --shutdown-delay=5s, --log-level=debug).
	Args []string
	// ProvideCerts makes the harness create a CA and a serving certificate
	// in --cert-dir and put the CA into the webhook configurations. Without
	// it Steward must bring its own (--cert-mode=self-managed), and the
	// harness waits until Steward has injected its CA.
	ProvideCerts bool
	// ServingCert, with ProvideCerts, is the certificate to serve instead
	// of a new one: Steward's replicas serve one certificate, as they
	// mount one Secret.
	ServingCert *ServingCert
	// Host is the name the API server dials Steward by: 127.0.0.1 when
	// empty and ProvideCerts is set, else localhost (the self-managed
	// certificate is issued for DNS names, so --cert-dns-name=localhost is
	// passed).
	Host string
	// Namespace is the namespace Steward runs in (--namespace), and the
	// one its webhook configurations are rendered to exclude;
	// StewardNamespace when empty. The harness creates it.
	Namespace string
	// Webhooks are the webhook configurations to register, pointed at
	// Steward, in place of those `steward manifests` renders for
	// Namespace (for example the ones a Helm chart renders).
	Webhooks *Webhooks
	// Env is added to the process's environment after the harness's own
	// ($MEMORY_LIMIT, $POD_NAME), as a Deployment's env would be, e.g.
	// KUBE_FEATURE_WatchListClient=false to switch a client-go feature off.
	Env []string
	// KeepRegistration runs Steward as the shipped Deployment does, keeping
	// its webhook configurations (--keep-registration), pointed at the
	// address the harness registers (--registration-url), so that what it
	// keeps is what the harness registered.
	KeepRegistration bool
	// RegistrationURL is the --registration-url KeepRegistration passes:
	// Steward's own address when empty (replicas pass their Spreader's).
	RegistrationURL string
	// Port is the webhook port, a free one when zero: a test that writes
	// Steward's address into files before the API server starts picks it.
	Port int
	// ReadyTimeout bounds the wait for /readyz; ReadyTimeout when zero.
	// Caches of hundreds of thousands of objects take longer to sync.
	ReadyTimeout time.Duration
}

// optionsFromArgs derives StewardOptions from a configuration and flags:
// certificates are provided unless the flags select --cert-mode=self-managed.
func optionsFromArgs(config string, args []string) StewardOptions {
	mode, _ := flagValue(args, "cert-mode")
	return StewardOptions{Config: config, Args: args, ProvideCerts: mode != "self-managed"}
}

// flagValue returns the last value args give flag name, in any of the forms
// Go's flag package accepts (-name=v, --name=v, -name v, --name v).
func flagValue(args []string, name string) (value string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		if a == args[i] {
			continue // not a flag
		}
		if v, found := strings.CutPrefix(a, name+"="); found {
			value, ok = v, true
		} else if a == name && i+1 < len(args) {
			value, ok = args[i+1], true
			i++
		}
	}
	return value, ok
}

// Steward is a running `steward serve` process.
type Steward struct {
	opts        StewardOptions
	args        []string
	env         []string // added to the test process's environment, as the Deployment's env
	dir         string
	certDir     string
	logPath     string
	port        int
	metricsPort int
	healthPort  int
	caBundle    []byte
	// metricsToken authenticates the harness to /metrics.
	metricsToken string
	// readyTimeout bounds waitReady at every start.
	readyTimeout time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	// startedAt is when the current process was started, startupTime how
	// long it then took to answer /readyz (zero until it has), readyPeak
	// its peak resident memory (VmHWM) when it first did.
	startedAt   time.Time
	startupTime time.Duration
	readyPeak   int64
}

// StartSteward runs Steward with configYAML (DefaultConfig, or empty for no
// --config) and extra flags, registers the rendered webhook configurations
// pointed at it, and returns once it is ready and the API server calls it.
// With --cert-mode=self-managed among the flags Steward brings its own
// certificates; otherwise the harness provides them.
func (e *Env) StartSteward(ctx context.Context, configYAML string, extraArgs ...string) (*Steward, error) {
	return e.StartStewardWith(ctx, optionsFromArgs(configYAML, extraArgs))
}

// StartStewardWith is StartSteward with explicit options.
func (e *Env) StartStewardWith(ctx context.Context, opts StewardOptions) (*Steward, error) {
	if e.Steward != nil && e.Steward.Running() {
		return nil, errors.New("steward is already running: use RestartSteward to change its configuration")
	}
	s, err := e.newSteward(ctx, opts)
	if err != nil {
		return nil, err
	}
	opts = s.opts
	if err := s.start(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.starting = s
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.starting = nil
		e.mu.Unlock()
	}()
	fail := func(err error) (*Steward, error) {
		_ = s.Stop()
		return nil, fmt.Errorf("%w\n--- steward log (last lines) ---\n%s", err, s.LogTail(40))
	}
	// Registered before Steward is ready: in self-managed mode it injects its
	// CA into these configurations, and may wait for them to exist.
	if err := e.registerWebhooks(ctx, endpoint{host: opts.Host, port: s.port, caBundle: s.caBundle}, opts.Namespace, opts.Webhooks); err != nil {
		return fail(err)
	}
	if err := s.waitReady(ctx, s.readyTimeout); err != nil {
		return fail(err)
	}
	if !opts.ProvideCerts {
		if err := e.waitCABundles(ctx, ReadyTimeout); err != nil {
			return fail(err)
		}
	}
	if err := e.WaitWebhooksEffective(ctx, PropagationTimeout); err != nil {
		return fail(err)
	}
	e.mu.Lock()
	e.Steward = s
	e.mu.Unlock()
	return s, nil
}

// newSteward prepares a Steward process for opts, defaults filled in:
// its directory, ports, certificates, configuration file and command
// line, and its namespace (and, in self-managed mode, the Secret it
// keeps its certificates in). It does not start it.
func (e *Env) newSteward(ctx context.Context, opts StewardOptions) (*Steward, error) {
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
		if !opts.ProvideCerts {
			opts.Host = "localhost"
		}
	}
	bin, err := stewardBinary()
	if err != nil {
		return nil, err
	}
	memoryLimit, err := RenderedMemoryLimit()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.stewards++
	n := e.stewards
	e.mu.Unlock()
	s := &Steward{dir: filepath.Join(e.dir, "steward-"+strconv.Itoa(n)), metricsToken: e.metricsToken, readyTimeout: opts.ReadyTimeout}
	if s.readyTimeout <= 0 {
		s.readyTimeout = ReadyTimeout
	}
	s.certDir = filepath.Join(s.dir, "certs")
	s.logPath = filepath.Join(s.dir, "steward.log")
	if err := os.MkdirAll(s.certDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", s.certDir, err)
	}
	s.port = opts.Port
	for _, p := range []*int{&s.port, &s.metricsPort, &s.healthPort} {
		if *p != 0 {
			continue
		}
		if *p, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if opts.ProvideCerts {
		sc := opts.ServingCert
		if sc == nil {
			created, err := NewServingCert()
			if err != nil {
				return nil, err
			}
			sc = &created
		}
		if err := sc.Write(s.certDir); err != nil {
			return nil, err
		}
		s.caBundle = sc.CA
	}
	if opts.Namespace == "" {
		opts.Namespace = StewardNamespace
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
	}
	s.opts = opts
	s.env = append([]string{"MEMORY_LIMIT=" + strconv.FormatInt(memoryLimit, 10), "POD_NAME=" + s.PodName()}, opts.Env...)
	s.args = []string{bin, "serve",
		"--kubeconfig", e.Kubeconfig,
		"--namespace", opts.Namespace,
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(s.port),
		"--cert-dir", s.certDir,
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(s.metricsPort),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(s.healthPort),
		// Nothing routes through a Service here, so waiting for endpoints to
		// drop Steward only slows tests; tests of shutdown pass their own.
		"--shutdown-delay", "0s",
	}
	if opts.Config != "" {
		if err := s.WriteConfig(opts.Config); err != nil {
			return nil, err
		}
		s.args = append(s.args, "--config", s.ConfigPath())
	}
	if !opts.ProvideCerts {
		s.args = append(s.args, "--cert-dns-name", opts.Host)
	}
	if opts.KeepRegistration {
		u := opts.RegistrationURL
		if u == "" {
			u = "https://" + net.JoinHostPort(opts.Host, strconv.Itoa(s.port))
		}
		s.args = append(s.args, "--keep-registration", "--registration-url", u)
	}
	s.args = append(s.args, opts.Args...)

	if !opts.ProvideCerts {
		if err := e.ensureCertSecret(ctx, opts.Namespace, opts.Args); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RestartSteward stops the running Steward and starts one with a new
// configuration and flags, re-registering the webhooks.
func (e *Env) RestartSteward(ctx context.Context, configYAML string, extraArgs ...string) (*Steward, error) {
	return e.RestartStewardWith(ctx, optionsFromArgs(configYAML, extraArgs))
}

// RestartStewardWith is RestartSteward with explicit options.
func (e *Env) RestartStewardWith(ctx context.Context, opts StewardOptions) (*Steward, error) {
	if e.Steward != nil {
		if err := e.Steward.Stop(); err != nil {
			return nil, fmt.Errorf("stopping the running steward: %w", err)
		}
	}
	return e.StartStewardWith(ctx, opts)
}

// start runs the process, its output appended to the log file.
func (s *Steward) start() error {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the steward log: %w", err)
	}
	defer log.Close() // the child holds its own descriptor
	fmt.Fprintf(log, "=== %s %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(s.env, " "), strings.Join(s.args, " "))
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting steward: %w", err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.exitErr, s.startedAt, s.startupTime, s.readyPeak = cmd, exited, nil, time.Now(), 0, 0
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(exited)
	}()
	return nil
}

// waitReady polls /readyz until it answers 200, then records the
// start-up time and memory peak.
func (s *Steward) waitReady(ctx context.Context, timeout time.Duration) error {
	// One deadline for both waits.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", s.healthPort)
	if err := waitOK(ctx, "steward", url, nil, timeout, s.Done(), s.ExitErr); err != nil {
		return err
	}
	mem, _ := ProcessMemory(s.PID())
	s.mu.Lock()
	s.startupTime = time.Since(s.startedAt)
	s.readyPeak = mem.Peak
	s.mu.Unlock()
	return s.waitMetricsListening(ctx, timeout)
}

// waitMetricsListening waits until the metrics port accepts connections:
// the metrics server starts beside the probes, not before them, and on a
// busy machine it may bind a moment after Steward answers ready, while
// tests read metrics as soon as Steward is ready.
func (s *Steward) waitMetricsListening(ctx context.Context, timeout time.Duration) error {
	addr := "127.0.0.1:" + strconv.Itoa(s.metricsPort)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-s.Done():
			return fmt.Errorf("steward exited before it served metrics: %v", s.ExitErr())
		case <-ctx.Done():
			return fmt.Errorf("steward was ready but did not serve metrics on %s within %s: %v", addr, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits for Steward to exit, sending SIGKILL after
// StopTimeout. It reports an exit that was not clean. Stopping a stopped
// Steward does nothing.
func (s *Steward) Stop() error {
	if !s.Running() {
		return nil
	}
	_ = s.Signal(syscall.SIGTERM)
	select {
	case <-s.Done():
	case <-time.After(StopTimeout):
		s.mu.Lock()
		_ = s.cmd.Process.Kill()
		s.mu.Unlock()
		<-s.Done()
		return fmt.Errorf("steward did not stop within %s of SIGTERM and was killed", StopTimeout)
	}
	if err := s.ExitErr(); err != nil {
		return fmt.Errorf("steward exited uncleanly after SIGTERM: %w", err)
	}
	return nil
}

// Signal sends sig to the Steward process.
func (s *Steward) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("steward is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Restart stops Steward and starts it again with the same flags, port and
// certificates, so the registered webhook configurations stay valid, and
// waits until it is ready. An error from stopping is reported even when the
// new process started.
func (s *Steward) Restart(ctx context.Context) error {
	stopErr := s.Stop()
	if err := s.start(); err != nil {
		return errors.Join(stopErr, err)
	}
	if err := s.waitReady(ctx, s.readyTimeout); err != nil {
		return errors.Join(stopErr, fmt.Errorf("%w\n--- steward log (last lines) ---\n%s", err, s.LogTail(40)))
	}
	return stopErr
}

// UseBinary makes the next start (Restart) run the steward binary at
// path, with the same flags: a new version rolled out to this replica.
// StewardBinary builds one.
func (s *Steward) UseBinary(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.args[0] = path
}

// StartupTime is how long the current process took from its start to its
// first ready answer on /readyz (polled every 100 ms), zero before that.
func (s *Steward) StartupTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startupTime
}

// ReadyPeak is the current process's peak resident memory (VmHWM) as read
// when it first answered /readyz: what starting cost, before anything
// else ran; zero before that.
func (s *Steward) ReadyPeak() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyPeak
}

// Running says whether the process has been started and has not exited.
func (s *Steward) Running() bool {
	select {
	case <-s.Done():
		return false
	default:
		return true
	}
}

// Done is closed when the current process exits.
func (s *Steward) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.exited
}

// ExitErr is the current process's exit error (nil for status 0), once Done.
func (s *Steward) ExitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitErr
}

// PID is the process id of the current process.
func (s *Steward) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Log returns everything Steward has written to stdout and stderr, across
// restarts (each start begins with a line "=== <time> <command line>").
func (s *Steward) Log() string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", s.logPath, err)
	}
	return string(data)
}

// LogTail returns the last n lines of Log.
func (s *Steward) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logTailWithout returns the last n lines of Log that contain none of
// skip.
func (s *Steward) logTailWithout(n int, skip ...string) string {
	var kept []string
	for _, line := range strings.Split(strings.TrimRight(s.Log(), "\n"), "\n") {
		if !slices.ContainsFunc(skip, func(x string) bool { return strings.Contains(line, x) }) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept[max(0, len(kept)-n):], "\n")
}

// LogPath is the path of the log file.
func (s *Steward) LogPath() string { return s.logPath }

// Port is the webhook server's port on 127.0.0.1.
func (s *Steward) Port() int { return s.port }

// URL is the webhook server's URL for path, as registered with the API
// server.
func (s *Steward) URL(path string) string {
	return fmt.Sprintf("https://%s:%d%s", s.opts.Host, s.port, path)
}

// CertDir is the --cert-dir directory.
func (s *Steward) CertDir() string { return s.certDir }

// CABundle is the CA the harness registered for Steward; nil when Steward
// manages its own certificates.
func (s *Steward) CABundle() []byte { return s.caBundle }

// MetricsURL is the Prometheus endpoint, served over HTTPS to clients the
// API server authenticates (MetricsRequest).
func (s *Steward) MetricsURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d/metrics", s.metricsPort)
}

// HealthURL is the health probe endpoint for path (/healthz or /readyz).
func (s *Steward) HealthURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.healthPort, path)
}

// PodName is the name Steward is told its Pod has ($POD_NAME, as the
// Deployment passes it): it records Events about its configuration file
// on that Pod, which need not exist.
func (s *Steward) PodName() string { return "steward-e2e-" + filepath.Base(s.dir) }

// ConfigPath is the --config file: config.yaml in a directory laid out as
// the kubelet lays out a ConfigMap volume (see WriteConfig).
func (s *Steward) ConfigPath() string { return filepath.Join(s.dir, "config", "config.yaml") }

// WriteConfig changes the configuration file as the kubelet changes a
// ConfigMap volume when the ConfigMap changes: the content goes into a new
// timestamped directory, the volume's ..data symlink is swapped to it in
// one rename, and config.yaml, a symlink to ..data/config.yaml, never
// changes itself. A running Steward sees the change when it reads the
// file again.
func (s *Steward) WriteConfig(content string) error {
	dir := filepath.Dir(s.ConfigPath())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	version, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(version, "config.yaml"), []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if _, err := os.Lstat(s.ConfigPath()); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", "config.yaml"), s.ConfigPath()); err != nil {
			return fmt.Errorf("writing the configuration: %w", err)
		}
	}
	return nil
}

// Args are the full command line, binary first.
func (s *Steward) Args() []string { return append([]string(nil), s.args...) }

// Env is what the harness adds to the environment of the process, as the
// Deployment's env does.
func (s *Steward) Env() []string { return append([]string(nil), s.env...) }
