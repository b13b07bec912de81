package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stewardhq/steward/manifests"
	"github.com/stewardhq/steward/webhooks"
)

const manifestsUsageText = `Usage: steward manifests [flags]

Renders Steward's install manifests from the rules' own registrations: a
kustomize base (Namespace, RBAC, Deployment, Service, PodDisruptionBudget,
webhook configurations) and two overlays, cert-manager and
self-managed-certs. 'make generate' runs it from the repository root, and
'make verify' fails when the committed files differ.

Examples:
  # Regenerate manifests/ and the Helm chart in a checkout:
  steward manifests --chart-dir charts/steward

  # Render for the configuration Steward will run with (exempt identities,
  # rules turned off), into a directory of your own:
  steward manifests --config steward-config.yaml --dir ./steward-install

  # Render for another namespace and image:
  steward manifests --dir ./steward-install --namespace platform-guards \
    --image registry.example.com/steward:v0.3.0
  kubectl apply -k ./steward-install/overlays/self-managed-certs
`

// manifestsOptions are the flags of `steward manifests`.
type manifestsOptions struct {
	dir, image, namespace, config, chartDir string
}

func manifestsFlagSet(o *manifestsOptions, out io.Writer) *flag.FlagSet {
	fs := newFlagSet("manifests", manifestsUsageText, out)
	fs.StringVar(&o.dir, "dir", "manifests", "directory to write the kustomize base and overlays into")
	fs.StringVar(&o.image, "image", manifests.DefaultImage, "Steward container image")
	fs.StringVar(&o.namespace, "namespace", manifests.DefaultNamespace, "namespace Steward runs in; its objects, RBAC, certificate names and the webhooks' exclusion of its own namespace follow")
	fs.StringVar(&o.config, "config", "", "StewardConfiguration file to render for: its exempt identities in matchConditions, no registration for rules in mode off, and the file in the ConfigMap; the defaults when empty")
	fs.StringVar(&o.chartDir, "chart-dir", "", "also write the Helm chart into this directory (make generate: "+manifests.ChartDir+"); its values default to --image and --config, and it installs into the release's namespace")
	return fs
}

// runManifests renders the install manifests into a directory (default
// manifests/, run from the repository root by `make generate`).
func runManifests(args []string, stdout, stderr io.Writer) int {
	var o manifestsOptions
	fs := manifestsFlagSet(&o, stderr)
	if stop, code := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "manifests", unexpectedArguments(fs.Args()))
	}
	if errs := validation.IsDNS1123Label(o.namespace); len(errs) > 0 {
		return usageError(stderr, "manifests", fmt.Errorf("--namespace %q: %s", o.namespace, strings.Join(errs, "; ")))
	}
	opts := manifests.Options{Image: o.image, Namespace: o.namespace}
	if o.config != "" {
		cfg, err := webhooks.LoadConfig(o.config)
		if err != nil {
			return fail(stderr, "manifests", exitConfig, fmt.Errorf("--config: %w", err))
		}
		opts.Config = &cfg
	}
	files, err := manifests.Render(opts)
	if err != nil {
		return fail(stderr, "manifests", exitFailed, err)
	}
	var chart map[string][]byte
	if o.chartDir != "" {
		if chart, err = manifests.RenderChart(manifests.Options{Image: o.image, Config: opts.Config}); err != nil {
			return fail(stderr, "manifests", exitFailed, err)
		}
	}
	if err := manifests.Write(o.dir, files); err != nil {
		return fail(stderr, "manifests", exitFailed, err)
	}
	fmt.Fprintf(stdout, "wrote %d files under %s\n", len(files), o.dir)
	if chart == nil {
		return exitOK
	}
	if err := manifests.Write(o.chartDir, chart); err != nil {
		return fail(stderr, "manifests", exitFailed, err)
	}
	fmt.Fprintf(stdout, "wrote %d files under %s\n", len(chart), o.chartDir)
	return exitOK
}
