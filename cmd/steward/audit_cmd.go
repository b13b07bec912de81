package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/stewardhq/steward/webhooks"
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
	restCfg, err := setup.RESTConfig(o.kubeconfig)
	if err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := setup.ReachAPIServer(ctx, restCfg, min(apiServerWait, o.timeout)); err != nil {
		return fail(stderr, "audit", exitCluster, err)
	}
	pass, err := setup.AuditOnce(ctx, restCfg, cfg, o.timeout)
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
		err = audit.WriteJSON(stdout, pass, results, code)
	case "policyreport":
		err = audit.WriteReports(stdout, audit.PolicyReportAPI(), results)
	case "openreports":
		err = audit.WriteReports(stdout, audit.OpenReportsAPI(), results)
	default:
		err = audit.WriteText(stdout, pass, results)
	}
	if err != nil {
		return fail(stderr, "audit", exitFailed, fmt.Errorf("writing the findings: %w", err))
	}
	return code
}
