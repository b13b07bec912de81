package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stewardhq/steward/manifests"
)

const manifestsUsageText = `Usage: steward manifests [flags]

Renders Steward's install manifests from the rules' own registrations: a
kustomize base (Namespace, RBAC, Deployment, Service, PodDisruptionBudget,
webhook configurations) and two overlays, cert-manager and
self-managed-certs. 'make generate' runs it from the repository root, and
'make verify' fails when the committed files differ.

Examples:
  # Regenerate manifests/ in a checkout:
  steward manifests

  # Render for another namespace and image into a directory of your own:
  steward manifests --dir ./steward-install --namespace platform-guards \
    --image registry.example.com/steward:v0.3.0
  kubectl apply -k ./steward-install/overlays/self-managed-certs
`

// manifestsOptions are the flags of `steward manifests`.
type manifestsOptions struct {
	dir, image, namespace string
}

func manifestsFlagSet(o *manifestsOptions, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("steward manifests", flag.ContinueOnError)
	fs.SetOutput(out)
	setUsage(fs, manifestsUsageText)
	fs.StringVar(&o.dir, "dir", "manifests", "directory to write the kustomize base and overlays into")
	fs.StringVar(&o.image, "image", manifests.DefaultImage, "Steward container image")
	fs.StringVar(&o.namespace, "namespace", manifests.DefaultNamespace, "namespace Steward runs in; its objects, RBAC, certificate names and the webhooks' exclusion of its own namespace follow")
	return fs
}

// runManifests renders the install manifests into a directory (default
// manifests/, run from the repository root by `make generate`).
func runManifests(args []string, stdout, stderr io.Writer) int {
	var o manifestsOptions
	fs := manifestsFlagSet(&o, stderr)
	if helpAsked(fs, args, stdout) {
		return 0
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "steward manifests: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	if errs := validation.IsDNS1123Label(o.namespace); len(errs) > 0 {
		fmt.Fprintf(stderr, "steward manifests: --namespace %q: %s\n", o.namespace, strings.Join(errs, "; "))
		return 2
	}
	files, err := manifests.Render(manifests.Options{Image: o.image, Namespace: o.namespace})
	if err != nil {
		fmt.Fprintf(stderr, "steward manifests: %v\n", err)
		return 1
	}
	if err := manifests.Write(o.dir, files); err != nil {
		fmt.Fprintf(stderr, "steward manifests: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d files under %s\n", len(files), o.dir)
	return 0
}
