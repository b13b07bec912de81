package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stewardhq/steward/manifests"
)

// runManifests renders the install manifests into a directory (default
// manifests/, run from the repository root by `make generate`).
func runManifests(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("steward manifests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "manifests", "directory to write the kustomize base and overlays into")
	image := fs.String("image", manifests.DefaultImage, "Steward container image")
	namespace := fs.String("namespace", manifests.DefaultNamespace, "namespace Steward runs in; its objects, RBAC, certificate names and the webhooks' exclusion of its own namespace follow")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if errs := validation.IsDNS1123Label(*namespace); len(errs) > 0 {
		fmt.Fprintf(stderr, "steward manifests: --namespace %q: %s\n", *namespace, strings.Join(errs, "; "))
		return 2
	}
	files, err := manifests.Render(manifests.Options{Image: *image, Namespace: *namespace})
	if err != nil {
		fmt.Fprintf(stderr, "steward manifests: %v\n", err)
		return 1
	}
	if err := manifests.Write(*dir, files); err != nil {
		fmt.Fprintf(stderr, "steward manifests: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d files under %s\n", len(files), *dir)
	return 0
}
