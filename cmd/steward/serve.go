package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/setup"
	"github.com/stewardhq/steward/webhooks/webhookserver"
)

// apiServerWait is how long serve (outside the cluster) and audit keep
// trying an API server they cannot connect to before giving up with
// exitCluster; tests shorten it.
var apiServerWait = 10 * time.Second

// runServe is `steward serve`: it reads the configuration, finds the API
// server and starts logging, then runs the server until a signal ends it
// (webhookserver.Run).
func runServe(args []string, stdout, stderr io.Writer) int {
	if o := defaultServeOptions(); helpAsked(serveFlagSet(&o, stderr), args, stdout) {
		return exitOK
	}
	opts, err := parseServeFlags(args)
	if err != nil {
		return usageError(stderr, "serve", err)
	}
	cfg := config.Defaults(webhooks.Sections())
	var configData []byte // what the file held at start-up; reloads compare with it
	if opts.configFile != "" {
		if configData, err = os.ReadFile(opts.configFile); err != nil {
			return fail(stderr, "serve", exitConfig, fmt.Errorf("reading configuration: %w", err))
		}
		if cfg, err = config.Parse(configData, opts.configFile, webhooks.Sections()); err != nil {
			return fail(stderr, "serve", exitConfig, err)
		}
	}
	restCfg, err := setup.RESTConfig(opts.kubeconfig)
	if err != nil {
		return fail(stderr, "serve", exitCluster, err)
	}
	// In the cluster, Steward waits for its API server however long it
	// takes, reporting unready meanwhile: exiting would only put a restart
	// back-off between the API server's return and Steward's. From a
	// kubeconfig, an API server that cannot be reached is an error now,
	// not informers that never sync.
	if !setup.InCluster(opts.kubeconfig) {
		if err := setup.ReachAPIServer(context.Background(), restCfg, apiServerWait); err != nil {
			return fail(stderr, "serve", exitCluster, err)
		}
	}
	verbosity, _ := webhookserver.ParseLogLevel(opts.logLevel)
	log, err := webhookserver.NewLogger(verbosity)
	if err != nil {
		return fail(stderr, "serve", exitFailed, fmt.Errorf("logger: %w", err))
	}
	ctrl.SetLogger(log)
	// Both validated with the flags.
	memoryLimit, _ := webhookserver.ParseMemoryLimit(opts.memoryLimit)
	requestMemory, _ := webhookserver.ParseRequestMemory(opts.requestMemory, memoryLimit)
	webhookserver.ApplyMemoryLimit(memoryLimit, os.Getenv("GOMEMLIMIT"), log)
	if err := webhookserver.Run(opts.server(requestMemory), restCfg, cfg, configData, log); err != nil {
		// Logging has started: the log has it, and the terminal gets the
		// same one line every other error is.
		log.Error(err, "steward stopped")
		return fail(stderr, "serve", exitFailed, err)
	}
	return exitOK
}
