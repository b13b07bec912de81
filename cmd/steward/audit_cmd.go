package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stewardhq/steward/webhooks"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/setup"
)

const auditUsageText = `Usage: steward audit [flags]

Runs Steward's background audit once against a cluster, without
installing anything, and prints what each rule finds in it: the same
findings 'steward serve' publishes as PolicyReports. The rules are built
from --config (the defaults without it), their caches are filled from the
API server (list and watch, nothing is written), and every rule that can
audit answers once its caches have synced. Rules the configuration turns
off or lists in audit.disabledRules are not asked.

Output (-o): text (grouped by namespace, then rule), json (one document:
findings in report order, failures first, and a summary), or the reports
'steward serve' would write, as YAML documents: policyreport
(wgpolicyk8s.io/v1alpha2 PolicyReports and the ClusterPolicyReport) or
openreports (openreports.io/v1alpha1 Reports and the ClusterReport), for
kubectl apply or a look at what Policy Reporter would show. The json
fields are stable: new ones may be added, existing ones keep their
meaning.

Exit status: 0 nothing fails (warnings alone exit 0); 1 a finding is a
fail, or the audit could not finish (a rule's caches not synced within
--timeout: nothing is printed on standard output); 2 bad flags; 3 the
--config file does not read or validate; 4 no kubeconfig, or the API
server cannot be reached or refuses the credentials.

Examples:
  # The cluster of the current kubeconfig context, as configured:
  steward audit --kubeconfig ~/.kube/config --config steward-config.yaml

  # For a script: fail the job when anything fails.
  steward audit --kubeconfig ./kubeconfig -o json > findings.json
`

// auditFormats are the values of -o.
var auditFormats = []string{"text", "json", "policyreport", "openreports"}

// auditOptions are the flags of `steward audit`.
type auditOptions struct {
	kubeconfig, configPath, output string
	timeout                        time.Duration
}

func auditFlagSet(o *auditOptions, out io.Writer) *flag.FlagSet {
	fs := newFlagSet("audit", auditUsageText, out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server; $KUBECONFIG or ~/.kube/config when empty")
	fs.StringVar(&o.configPath, "config", "", "Steward configuration file the rules are built from; the defaults when empty")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the rules' caches to sync")
	o.output = "text"
	format := func(v string) error {
		if !slices.Contains(auditFormats, v) {
			return fmt.Errorf("want one of %s", strings.Join(auditFormats, ", "))
		}
		o.output = v
		return nil
	}
	fs.Func("o", "short for --output `format`", format)
	fs.Func("output", "output `format`: text (default), json, policyreport or openreports", format)
	return fs
}

// runAudit is `steward audit`.
func runAudit(args []string, stdout, stderr io.Writer) int {
	var o auditOptions
	fs := auditFlagSet(&o, stderr)
	if stop, code := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "audit", unexpectedArguments(fs.Args()))
	}
	if o.timeout <= 0 {
		return usageError(stderr, "audit", fmt.Errorf("--timeout: %s must be positive", o.timeout))
	}
	cfg := config.Defaults(webhooks.Sections())
	if o.configPath != "" {
		var err error
		if cfg, err = config.Load(o.configPath, webhooks.Sections()); err != nil {
			return fail(stderr, "audit", exitConfig, err)
		}
	}
	restCfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := reachAPIServer(ctx, restCfg, min(apiServerWait, o.timeout)); err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	pass, err := auditOnce(ctx, restCfg, cfg, o.timeout)
	if err != nil {
		return fail(stderr, "audit", exitFailed, err)
	}
	results := audit.Results(pass.Answered(), time.Time{})
	code := exitOK
	for _, r := range results {
		if r.Result == "fail" {
			code = exitFailed
		}
	}
	switch o.output {
	case "json":
		err = writeAuditJSON(stdout, pass, results, code)
	case "policyreport":
		err = writeAuditReports(stdout, audit.PolicyReportAPI(), results)
	case "openreports":
		err = writeAuditReports(stdout, audit.OpenReportsAPI(), results)
	default:
		err = writeAuditText(stdout, pass, results)
	}
	if err != nil {
		return fail(stderr, "audit", exitFailed, fmt.Errorf("writing the findings: %w", err))
	}
	return code
}

// auditPoll is how often the rules are asked again while their caches
// sync.
const auditPoll = 250 * time.Millisecond

// auditOnce sets the rules cfg builds up over the cluster, as `steward
// serve` does but with no webhook server, metrics listener, probes or
// leader election, and returns their answers to one audit pass once every
// rule asked can answer, or an error naming those that could not within
// timeout.
func auditOnce(ctx context.Context, restCfg *rest.Config, cfg config.Config, timeout time.Duration) (audit.Pass, error) {
	rules := webhooks.Rules(cfg)
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Cache:                  cacheOptions(rules),
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := setup.WithManager(mgr, rules); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	defer func() { cancel(); <-stopped }()

	auditors := webhooks.Auditors(cfg.Audit, rules)
	for {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			pass := audit.Collect(ctx, auditors, mgr.GetAPIReader())
			if len(pass.Failed()) == 0 {
				return pass, nil
			}
			select {
			case <-ctx.Done():
				return nil, notAnswered(pass, timeout)
			case err := <-stopped:
				stopped <- err
				return nil, fmt.Errorf("reading the cluster: %w", err)
			case <-time.After(auditPoll):
				continue
			}
		}
		select {
		case err := <-stopped:
			stopped <- err
			if err != nil {
				return nil, fmt.Errorf("reading the cluster: %w", err)
			}
		default:
		}
		return nil, fmt.Errorf("the informer caches did not sync within --timeout %s: is the API server reachable, and may this identity list and watch what the rules read?", timeout)
	}
}

// notAnswered names each rule that could not answer, and why.
func notAnswered(p audit.Pass, timeout time.Duration) error {
	var errs []error
	for _, a := range p {
		switch {
		case a.Err == nil:
		case strings.HasPrefix(a.Err.Error(), a.Rule+": "):
			errs = append(errs, fmt.Errorf("  %w", a.Err))
		default:
			errs = append(errs, fmt.Errorf("  %s: %w", a.Rule, a.Err))
		}
	}
	return fmt.Errorf("rules could not answer within --timeout %s (their caches did not sync: may this identity list and watch what they read?):\n%w", timeout, errors.Join(errs...))
}

// auditReport is the JSON output of `steward audit -o json`.
type auditReport struct {
	// Rules are the rules asked, in Steward's order.
	Rules    []string       `json:"rules"`
	Findings []auditFinding `json:"findings"`
	Summary  auditSummary   `json:"summary"`
}

// auditFinding is one finding, in a PolicyReport result's words: policy
// is the rule, rule is the check.
type auditFinding struct {
	Policy     string            `json:"policy"`
	Rule       string            `json:"rule"`
	Result     string            `json:"result"`
	Resource   auditResource     `json:"resource"`
	Message    string            `json:"message"`
	Properties map[string]string `json:"properties,omitempty"`
}

type auditResource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

type auditSummary struct {
	Pass     int `json:"pass"`
	Fail     int `json:"fail"`
	Warn     int `json:"warn"`
	ExitCode int `json:"exitCode"`
}

func writeAuditJSON(w io.Writer, pass audit.Pass, results []audit.Result, code int) error {
	r := auditReport{Rules: []string{}, Findings: []auditFinding{}, Summary: auditSummary{ExitCode: code}}
	for _, a := range pass {
		r.Rules = append(r.Rules, a.Rule)
	}
	for _, res := range results {
		var o auditResource
		if len(res.Resources) > 0 {
			ref := res.Resources[0]
			o = auditResource{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: string(ref.UID)}
		}
		r.Findings = append(r.Findings, auditFinding{Policy: res.Policy, Rule: res.Rule, Result: res.Result, Resource: o, Message: res.Message, Properties: res.Properties})
		switch res.Result {
		case "pass":
			r.Summary.Pass++
		case "fail":
			r.Summary.Fail++
		case "warn":
			r.Summary.Warn++
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeAuditReports prints the reports of api the background audit would
// write for results, as YAML documents: cluster-scoped first, then by
// namespace.
func writeAuditReports(w io.Writer, api audit.ReportAPI, results []audit.Result) error {
	reports := audit.Reports(results, audit.MaxResults)
	for _, ns := range slices.Sorted(maps.Keys(reports)) {
		data, err := yaml.Marshal(audit.ReportObject(api, reports[ns]).Object)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, "---\n"+string(data)); err != nil {
			return err
		}
	}
	return nil
}

// writeAuditText prints the findings by namespace (cluster-scoped objects
// first), then by rule, each line its verdict, check, object and message.
func writeAuditText(w io.Writer, pass audit.Pass, results []audit.Result) error {
	byNamespace := map[string][]audit.Result{}
	counts := map[string]int{}
	for _, r := range results {
		ns := ""
		if len(r.Resources) > 0 {
			ns = r.Resources[0].Namespace
		}
		byNamespace[ns] = append(byNamespace[ns], r)
		counts[r.Result]++
	}
	var b strings.Builder
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		if ns == "" {
			b.WriteString("cluster-scoped:\n")
		} else {
			fmt.Fprintf(&b, "namespace %s:\n", ns)
		}
		group := byNamespace[ns]
		slices.SortStableFunc(group, func(a, b audit.Result) int { return strings.Compare(a.Policy, b.Policy) })
		policy := ""
		for _, r := range group {
			if r.Policy != policy {
				policy = r.Policy
				fmt.Fprintf(&b, "  %s:\n", policy)
			}
			obj := ""
			if len(r.Resources) > 0 {
				ref := r.Resources[0]
				obj = ref.Kind + " " + ref.Name
			}
			fmt.Fprintf(&b, "    %-4s  %s  %s: %s", r.Result, r.Rule, obj, r.Message)
			if len(r.Properties) > 0 {
				var props []string
				for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
					props = append(props, k+"="+r.Properties[k])
				}
				fmt.Fprintf(&b, " (%s)", strings.Join(props, ", "))
			}
			b.WriteString("\n")
		}
	}
	var asked []string
	for _, a := range pass {
		asked = append(asked, a.Rule)
	}
	if len(results) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d findings: %d fail, %d warn, %d pass (rules asked: %s)\n",
		len(results), counts["fail"], counts["warn"], counts["pass"], strings.Join(asked, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}
