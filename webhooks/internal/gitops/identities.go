package gitops

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// KubernetesControllers are Kubernetes' own identities whose writes to
// GitOps-managed objects are part of how the cluster works; refusing them
// would break garbage collection, namespace deletion or routine
// reconciliation, and none of them edits the desired state a GitOps tool
// deploys.
// They are excluded in the webhook's matchConditions, so a Steward outage
// never blocks them, and allowed again in the handler.
var KubernetesControllers = []string{
	// Deletes dependents of deleted owners and rewrites ownerReferences.
	"system:serviceaccount:kube-system:generic-garbage-collector",
	// Deletes everything in a namespace that is being deleted.
	"system:serviceaccount:kube-system:namespace-controller",
	// Writes the deployment.kubernetes.io/revision annotation on Deployments.
	"system:serviceaccount:kube-system:deployment-controller",
	// Copy a Service's labels, a GitOps tool's included, onto its Endpoints and
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

// NodesGroup is the group of kubelets. A kubelet deletes the pods it has
// finished terminating and mirrors static pods; the NodeRestriction
// admission plugin already limits it to its own pods.
const NodesGroup = "system:nodes"

// Identities are the users and groups a tool writes as.
type Identities struct {
	Users, Groups []string
}

// Has reports whether u is one of the identities.
func (ids Identities) Has(u authenticationv1.UserInfo) bool {
	return slices.Contains(ids.Users, u.Username) || intersects(ids.Groups, u.Groups)
}

// Kubernetes reports whether u is one of Kubernetes' own controllers.
func Kubernetes(u authenticationv1.UserInfo) bool {
	return slices.Contains(KubernetesControllers, u.Username) || slices.Contains(u.Groups, NodesGroup)
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
