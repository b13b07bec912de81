package harness

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestSumSamples(t *testing.T) {
	const text = `# HELP steward_decisions_total Admission decisions made by Steward, by rule and outcome.
# TYPE steward_decisions_total counter
steward_decisions_total{decision="allowed",rule="fleetguard"} 3
steward_decisions_total{decision="denied",rule="fleetguard"} 2
steward_decisions_total{decision="denied",rule="claimguard"} 5
# HELP controller_runtime_webhook_latency_seconds Histogram of the latency of processing admission requests
# TYPE controller_runtime_webhook_latency_seconds histogram
controller_runtime_webhook_latency_seconds_bucket{webhook="/validate/fleetguard",le="+Inf"} 4
controller_runtime_webhook_latency_seconds_sum{webhook="/validate/fleetguard"} 0.01
controller_runtime_webhook_latency_seconds_count{webhook="/validate/fleetguard"} 4
`
	cases := map[string]struct {
		reason string
		name   string
		labels map[string]string
		want   float64
	}{
		"AllLabels":      {reason: "a full label set selects one sample", name: "steward_decisions_total", labels: map[string]string{"rule": "fleetguard", "decision": "denied"}, want: 2},
		"SubsetSums":     {reason: "a partial label set sums every sample it matches", name: "steward_decisions_total", labels: map[string]string{"decision": "denied"}, want: 7},
		"NoLabelsSums":   {reason: "no labels sums the whole metric", name: "steward_decisions_total", want: 10},
		"UnknownValue":   {reason: "a label value no sample has matches nothing", name: "steward_decisions_total", labels: map[string]string{"decision": "errored"}, want: 0},
		"MissingMetric":  {reason: "a vector never incremented has no samples and counts as 0", name: "steward_unknown_total", want: 0},
		"HistogramCount": {reason: "a histogram counts observations", name: "controller_runtime_webhook_latency_seconds", labels: map[string]string{"webhook": "/validate/fleetguard"}, want: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := sumSamples(text, tc.name, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s: got %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

func TestOptionsFromArgs(t *testing.T) {
	cases := map[string]struct {
		reason      string
		args        []string
		wantProvide bool
	}{
		"Default":         {reason: "the harness provides certificates by default", args: nil, wantProvide: true},
		"SelfManagedEq":   {reason: "--cert-mode=self-managed leaves certificates to Steward", args: []string{"--cert-mode=self-managed"}, wantProvide: false},
		"SelfManagedArg":  {reason: "the flag's value may be a separate argument", args: []string{"--log-level", "debug", "--cert-mode", "self-managed"}, wantProvide: false},
		"FilesMode":       {reason: "--cert-mode=files still needs certificates", args: []string{"--cert-mode=files"}, wantProvide: true},
		"OtherFlagsAlone": {reason: "unrelated flags change nothing", args: []string{"--shutdown-delay=5s"}, wantProvide: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := optionsFromArgs("", tc.args).ProvideCerts; got != tc.wantProvide {
				t.Errorf("%s: ProvideCerts = %v, want %v", tc.reason, got, tc.wantProvide)
			}
		})
	}
}

func TestFlagValue(t *testing.T) {
	cases := map[string]struct {
		reason    string
		args      []string
		wantValue string
		wantOK    bool
	}{
		"DoubleDashEquals": {reason: "--name=value", args: []string{"--cert-secret=s1"}, wantValue: "s1", wantOK: true},
		"SingleDashSpace":  {reason: "-name value", args: []string{"-cert-secret", "s2"}, wantValue: "s2", wantOK: true},
		"LastWins":         {reason: "Go's flag package keeps the last value", args: []string{"--cert-secret=a", "--cert-secret", "b"}, wantValue: "b", wantOK: true},
		"PrefixIsNotFlag":  {reason: "a longer flag sharing the prefix does not count", args: []string{"--cert-secret-name=x"}, wantOK: false},
		"ValueNotFlag":     {reason: "a value that looks like the name is not the flag", args: []string{"--config", "cert-secret"}, wantOK: false},
		"Absent":           {reason: "no such flag", args: []string{"--port=1"}, wantOK: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := flagValue(tc.args, "cert-secret")
			if got != tc.wantValue || ok != tc.wantOK {
				t.Errorf("%s: got %q %v, want %q %v", tc.reason, got, ok, tc.wantValue, tc.wantOK)
			}
		})
	}
}

func TestForEndpointRewritesOnlyClientConfig(t *testing.T) {
	path := "/validate/fleetguard"
	port := int32(443)
	fail := admissionregistrationv1.Fail
	rendered := Webhooks{Validating: &admissionregistrationv1.ValidatingWebhookConfiguration{
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:          "fleetguard.steward.dev",
			FailurePolicy: &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Name: "steward", Namespace: StewardNamespace, Path: &path, Port: &port},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "true"}},
		}},
	}}
	got, err := rendered.forEndpoint(endpoint{host: "127.0.0.1", port: 9443, caBundle: []byte("CA")})
	if err != nil {
		t.Fatal(err)
	}
	want := rendered.Validating.DeepCopy()
	url := "https://127.0.0.1:9443/validate/fleetguard"
	want.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: []byte("CA")}
	if diff := cmp.Diff(want, got.Validating); diff != "" {
		t.Errorf("rewritten configuration (-want +got):\n%s", diff)
	}
	if rendered.Validating.Webhooks[0].ClientConfig.Service == nil {
		t.Error("the rendered configuration was modified in place")
	}
}

func TestProcessesWithFindsOnlyMarkedProcesses(t *testing.T) {
	mark := "/tmp/steward-e2e-test-" + strconv.Itoa(os.Getpid()) + "/"
	marked := exec.Command("/bin/sh", "-c", "sleep 30", "sh", mark+"file")
	unmarked := exec.Command("/bin/sh", "-c", "sleep 30")
	for _, c := range []*exec.Cmd{marked, unmarked} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Process.Kill()
			_ = c.Wait()
		})
	}
	pids, err := processesWith(mark)
	if err != nil {
		t.Fatal(err)
	}
	// The marked shell may be caught forking its sleep: until the child
	// execs, its command line is the shell's, mark included, and finding
	// it is right (the watchdog kills children too). So the test asks only
	// that the marked process is found and the unmarked one is not.
	if !slices.Contains(pids, marked.Process.Pid) || slices.Contains(pids, unmarked.Process.Pid) {
		t.Errorf("processes with the mark: %v; want %d (marked) and not %d (unmarked)", pids, marked.Process.Pid, unmarked.Process.Pid)
	}
}

func TestProcessCPUAndMachineBusyGrowWhileThisProcessSpins(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	busyBefore, err := MachineBusy()
	if err != nil {
		t.Fatal(err)
	}
	// The times move in clock ticks; on a busy machine a short spin may
	// get none, so only a long one without any is a failure.
	after := before
	for end := time.Now().Add(5 * time.Second); after <= before && time.Now().Before(end); {
		for spin := time.Now().Add(20 * time.Millisecond); time.Now().Before(spin); {
		}
		if after, err = ProcessCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	busyAfter, err := MachineBusy()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before || busyAfter <= busyBefore {
		t.Errorf("CPU time %s then %s, machine busy %s then %s: want both to grow", before, after, busyBefore, busyAfter)
	}
}

func TestServingCertificateIsAnECDSALeafSignedByItsCA(t *testing.T) {
	sc, err := NewServingCert()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(sc.Cert, sc.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(sc.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Errorf("the serving certificate does not verify against its CA for localhost: %v", err)
	}
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || len(pair.Certificate) != 2 {
		t.Errorf("want an ECDSA leaf followed by its CA, got a %T key and a chain of %d", leaf.PublicKey, len(pair.Certificate))
	}
}

func TestRenderedShutdownAndReplicasAreRead(t *testing.T) {
	s, err := RenderedShutdown()
	if err != nil {
		t.Fatal(err)
	}
	if s.Delay <= 0 || s.Timeout <= 0 || s.GracePeriod <= s.Delay+s.Timeout {
		t.Errorf("rendered shutdown %+v: want a delay, a timeout, and a grace period longer than both", s)
	}
	if got := s.Args(); !slices.Equal(got, []string{"--shutdown-delay=" + s.Delay.String(), "--shutdown-timeout=" + s.Timeout.String()}) {
		t.Errorf("Args() = %v", got)
	}
	if n, err := RenderedReplicas(); err != nil || n < 2 {
		t.Errorf("rendered replicas %d (%v): want several", n, err)
	}
}
