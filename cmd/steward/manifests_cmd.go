package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stewardhq/steward/manifests"
	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

const manifestsUsageText = `Usage: steward manifests [flags]

Renders Steward's install manifests from the rules' own registrations: a
kustomize base (Namespace, RBAC, Deployment, Service, PodDisruptionBudget,
webhook configurations) and two overlays, cert-manager and
self-managed-certs. 'make generate' runs it from the repository root, and
'make verify' fails when the committed files differ.

With --dir - it writes no files: it prints, on standard output, the objects
'kubectl kustomize <dir>/overlays/<overlay>' would print for the overlay
--overlay names (the base's objects, patched by the overlay, and the
overlay's own), in kustomize's order, each document preceded by a
'# Source: <file>' comment, ready for 'kubectl apply -f -'. The monitoring
and PolicyReport CRD directories, and --chart-dir, are written as files
only.

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

  # Install without writing files or running kustomize: --dir - prints what
  # 'kubectl kustomize' prints for one overlay (--overlay), one YAML stream.
  steward manifests --config steward-config.yaml --dir - | kubectl apply -f -
  steward manifests --dir - --overlay self-managed-certs | kubectl apply -f -
`

// manifestsOptions are the flags of `steward manifests`.
type manifestsOptions struct {
	dir, image, namespace, config, chartDir, overlay string
	// The static admission configuration (manifests.Static).
	staticDir, staticURL, staticCAFile, staticHostDir string
	staticWriters                                     []string
}

// manifestsStdout is the --dir that prints the install instead of writing
// files.
const manifestsStdout = "-"

func manifestsFlagSet(o *manifestsOptions, out io.Writer) *flag.FlagSet {
	fs := newFlagSet("manifests", manifestsUsageText, out)
	fs.StringVar(&o.dir, "dir", "manifests", "directory to write the kustomize base and overlays into; - prints one overlay's objects on standard output instead (see --overlay)")
	fs.StringVar(&o.overlay, "overlay", "", "with --dir -: the overlay whose objects to print, "+strings.Join(manifests.Overlays(), " or ")+" (default "+manifests.OverlayCertManager+")")
	fs.StringVar(&o.image, "image", manifests.DefaultImage, "Steward container image")
	fs.StringVar(&o.namespace, "namespace", manifests.DefaultNamespace, "namespace Steward runs in; its objects, RBAC, certificate names and the webhooks' exclusion of its own namespace follow")
	fs.StringVar(&o.config, "config", "", "StewardConfiguration file to render for: its exempt identities in matchConditions, no registration for rules in mode off, and the file in the ConfigMap; the defaults when empty")
	fs.StringVar(&o.staticDir, "static-dir", "", "also write the static admission configuration into this directory: the webhook configurations and a ValidatingAdmissionPolicy that kube-apiserver reads from its own disk (manifest-based admission control, Kubernetes 1.37), and the AdmissionConfiguration for --admission-control-config-file; copy the directory to --static-host-dir on every control-plane node")
	fs.StringVar(&o.staticURL, "static-url", "", "with --static-dir: the https://host:port the API server reaches Steward at (static webhooks cannot name a Service)")
	fs.StringVar(&o.staticCAFile, "static-ca-file", "", "with --static-dir: the PEM CA of Steward's serving certificate, for the static webhooks' caBundle (nothing injects one into a file)")
	fs.StringVar(&o.staticHostDir, "static-host-dir", "/etc/kubernetes/steward", "with --static-dir: the absolute directory the API server reads the static files from")
	fs.Func("static-writer", "with --static-dir: a user besides Steward's service account who may change Steward's API-registered webhook configurations, such as the installer (repeatable)", func(v string) error {
		o.staticWriters = append(o.staticWriters, v)
		return nil
	})
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
	toStdout := o.dir == manifestsStdout
	switch {
	case o.chartDir == manifestsStdout:
		return usageError(stderr, "manifests", errors.New("--chart-dir -: the chart is written as files only; name a directory"))
	case o.overlay != "" && !toStdout:
		return usageError(stderr, "manifests", errors.New("--overlay applies to --dir - only: a directory gets the base and both overlays"))
	case o.overlay == "":
		o.overlay = manifests.OverlayCertManager
	case !slices.Contains(manifests.Overlays(), o.overlay):
		return usageError(stderr, "manifests", fmt.Errorf("--overlay %q: want one of %s", o.overlay, strings.Join(manifests.Overlays(), ", ")))
	}
	opts := manifests.Options{Image: o.image, Namespace: o.namespace}
	if o.config != "" {
		cfg, err := config.Load(o.config, webhooks.Sections())
		if err != nil {
			return fail(stderr, "manifests", exitConfig, fmt.Errorf("--config: %w", err))
		}
		opts.Config = &cfg
	}
	var chart map[string][]byte
	if o.chartDir != "" {
		var err error
		if chart, err = manifests.RenderChart(manifests.Options{Image: o.image, Config: opts.Config}); err != nil {
			return fail(stderr, "manifests", exitFailed, err)
		}
	}
	// What was written is reported on standard output, unless standard
	// output is the install itself.
	report := stdout
	if toStdout {
		report = stderr
		docs, err := manifests.Build(opts, o.overlay)
		if err != nil {
			return fail(stderr, "manifests", exitFailed, err)
		}
		if _, err := stdout.Write(manifests.Stream(docs)); err != nil {
			return fail(stderr, "manifests", exitFailed, fmt.Errorf("writing to standard output: %w", err))
		}
	} else {
		files, err := manifests.Render(opts)
		if err != nil {
			return fail(stderr, "manifests", exitFailed, err)
		}
		if err := manifests.Write(o.dir, files); err != nil {
			return fail(stderr, "manifests", exitFailed, err)
		}
		fmt.Fprintf(report, "wrote %d files under %s\n", len(files), o.dir)
	}
	if o.staticDir != "" {
		if code := writeStatic(o, opts, report, stderr); code != exitOK {
			return code
		}
	}
	if chart == nil {
		return exitOK
	}
	if err := manifests.Write(o.chartDir, chart); err != nil {
		return fail(stderr, "manifests", exitFailed, err)
	}
	fmt.Fprintf(report, "wrote %d files under %s\n", len(chart), o.chartDir)
	return exitOK
}

// writeStatic writes the static admission configuration (--static-dir).
func writeStatic(o manifestsOptions, opts manifests.Options, report, stderr io.Writer) int {
	if o.staticDir == manifestsStdout {
		return usageError(stderr, "manifests", errors.New("--static-dir -: the static configuration is written as files only; name a directory"))
	}
	if o.staticURL == "" || o.staticCAFile == "" {
		return usageError(stderr, "manifests", errors.New("--static-dir needs --static-url and --static-ca-file: static webhooks are called by URL, with the CA in the file"))
	}
	ca, err := os.ReadFile(o.staticCAFile)
	if err != nil {
		return fail(stderr, "manifests", exitConfig, fmt.Errorf("--static-ca-file: %w", err))
	}
	files, err := manifests.Static(manifests.StaticOptions{Options: opts, URL: o.staticURL, CABundle: ca, Dir: o.staticHostDir, Writers: o.staticWriters})
	if err != nil {
		return usageError(stderr, "manifests", err)
	}
	if err := manifests.Write(o.staticDir, files); err != nil {
		return fail(stderr, "manifests", exitFailed, err)
	}
	fmt.Fprintf(report, "wrote %d files under %s\n", len(files), o.staticDir)
	return exitOK
}
