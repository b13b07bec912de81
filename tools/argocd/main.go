// Command argocd is the part of Argo CD's multi-call binary the e2e tests
// run: the application controller, the repo server, and the Git askpass
// helper the repo server runs as a child (it names itself through
// ARGOCD_BINARY_NAME). It picks the program by argv[0]'s base name, as
// Argo CD's own cmd/main.go does, and calls the same commands packages of
// github.com/argoproj/argo-cd/v3, so each program is the one Argo CD users
// run. Leaving out the API server, the CLI, Dex, notifications and the
// ApplicationSet controller (their SCM and notification clients) leaves
// 1,755 of the 2,325 packages to compile.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

// binaryNameEnv overrides argv[0], as in Argo CD's main.
const binaryNameEnv = "ARGOCD_BINARY_NAME"

func init() {
	// klog at the configured level and format, as Argo CD's main sets it.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	// Argo CD's main also calls grpc.DisableSRVLookups, which turns off
	// the DNS SRV lookups gRPC's grpclb balancer turns on when it is
	// linked, and panics when they are already off. This build does not
	// link grpclb (the packages left out bring it), so they are off.
	name := filepath.Base(os.Args[0])
	if v := os.Getenv(binaryNameEnv); v != "" {
		name = v
	}
	var command *cobra.Command
	switch name {
	case common.CommandApplicationController:
		command = appcontroller.NewCommand()
	case common.CommandRepoServer:
		command = reposerver.NewCommand()
	case common.CommandGitAskPass:
		command = gitaskpass.NewCommand()
		command.SilenceErrors, command.SilenceUsage = true, true
	default:
		fmt.Fprintf(os.Stderr, "argocd: %q is not a program of this build: run it as %s, %s or %s (argv[0] or %s)\n",
			name, common.CommandApplicationController, common.CommandRepoServer, common.CommandGitAskPass, binaryNameEnv)
		os.Exit(2)
	}
	if err := command.Execute(); err != nil {
		// As Argo CD's main does: the error on stdout, exit status 1.
		fmt.Fprintf(os.Stdout, "Error: %v\n", err)
		os.Exit(1)
	}
}
