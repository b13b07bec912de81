package fleetguard

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// kubernetesControllers are Kubernetes' own identities whose writes to
// Fleet-managed objects are part of how the cluster works; refusing them
// would break garbage collection, namespace deletion or routine
// reconciliation, and none of them edits the desired state Fleet deploys.
// They are excluded in the webhook's matchConditions, so a Steward outage
// never blocks them, and allowed again in the handler.
var kubernetesControllers = []string{
	// Deletes dependents of deleted owners and rewrites ownerReferences.
	"system:serviceaccount:kube-system:generic-garbage-collector",
	// Deletes everything in a namespace that is being deleted.
	"system:serviceaccount:kube-system:namespace-controller",
	// Writes the deployment.kubernetes.io/revision annotation on Deployments.
	"system:serviceaccount:kube-system:deployment-controller",
	// Copy a Service's labels, Fleet's included, onto its Endpoints and
	// EndpointSlices, and create, update and delete those.
	"system:serviceaccount:kube-system:endpoint-controller",
	"system:serviceaccount:kube-system:endpointslice-controller",
	"system:serviceaccount:kube-system:endpointslicemirroring-controller",
	// Binds PersistentVolumeClaims and PersistentVolumes (spec.volumeName,
	// spec.claimRef, pv.kubernetes.io/* annotations).
	"system:serviceaccount:kube-system:persistent-volume-binder",
	// Deletes finished Jobs that set ttlSecondsAfterFinished.
	"system:serviceaccount:kube-system:ttl-after-finished-controller",
	// Fills in the rules of aggregated ClusterRoles (aggregationRule).
	"system:serviceaccount:kube-system:clusterrole-aggregation-controller",
	// The controller manager's own identity, used for every controller
	// when it runs without --use-service-account-credentials.
	"system:kube-controller-manager",
	// The API server's loopback identity for its internal writes.
	"system:apiserver",
}

// nodesGroup is the group of kubelets. A kubelet deletes the pods it has
// finished terminating and mirrors static pods; the NodeRestriction
// admission plugin already limits it to its own pods.
const nodesGroup = "system:nodes"

// The kinds of identity an allowed request can have, for its reason.
const (
	identityAgent      = "the Fleet agent"
	identityController = "a Kubernetes controller"
)

// trusted says whether a user's writes are allowed without question, and
// as whom. The webhook's matchConditions keep these requests away from
// Steward; this check is the same decision for requests that arrive anyway
// (an edited configuration, or a rule run offline).
func (r *Rule) trusted(u authenticationv1.UserInfo) (string, bool) {
	switch {
	case slices.Contains(r.agentUsers, u.Username) || intersects(r.agentGroups, u.Groups):
		return identityAgent, true
	case slices.Contains(kubernetesControllers, u.Username) || slices.Contains(u.Groups, nodesGroup):
		return identityController, true
	}
	return "", false
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
