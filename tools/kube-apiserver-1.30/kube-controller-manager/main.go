// Command kube-controller-manager is the upstream Kubernetes controller
// manager, built from the same k8s.io/kubernetes module as the e2e API
// server, so the e2e tests run Kubernetes' real garbage collector (Foreground
// deletion, ownerReference cascades) and namespace, deployment and replicaset
// controllers. It mirrors
// k8s.io/kubernetes/cmd/kube-controller-manager/controller-manager.go.
package main

import (
	"os"
	_ "time/tzdata" // for CronJob Time Zone support

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugin
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
