package fluxguard

import (
	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/rule"
)

// SetupWithManager caches Kustomizations and HelmReleases, trimmed to
// what decisions read and their inventories (keepOwner): never the
// objects they apply. Each kind is cached once its CRD is served, at the
// version the server prefers, so a cluster without Flux leaves the rule
// idle (every owner "not found", nothing unready), and Flux installed
// after Steward started is guarded once its informers sync, without a
// restart. The kinds served at start-up gate readiness.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	return r.resolver.SetUp(mgr, cluster, Name, "owners", map[schema.GroupResource]clustercache.Spec{
		kustomizations: {Transform: keepOwner},
		helmReleases:   {Transform: keepOwner},
		// source-watcher's, which name what they generate by UID.
		artifactGenerators: {Transform: keepOwner},
	})
}

var _ clustercache.ManagerSetup = (*Rule)(nil)

// Collector reports the owners' informers as
// steward_watched_kinds{rule="fluxguard",...}. A rule that was never set
// up reports nothing; an heir keeps the running rule's cache.
func (r *Rule) Collector() prometheus.Collector { return r.resolver.Collector() }

var _ rule.MetricsCollector = (*Rule)(nil)

// keepOwner is the owners' informers' transform.
var keepOwner = gitops.Keep(Name, ownerOf)

// KeepOwner is the owners' informer transform (keepOwner): it trims a
// Kustomization or HelmRelease, as the API server sends it, to what the
// cache keeps. Benchmarks outside this package use it to build the cache
// they pass to WithOwners, so they measure the rule on what it reads in a
// cluster.
func KeepOwner(obj any) (any, error) { return keepOwner(obj) }

// rbac is what the owners' cache reads, Kustomizations and HelmReleases,
// and what the audit lists besides them: the workloads
// (gitops.AuditRBAC), read-only. The audit lists no other kind an
// inventory holds: RBAC has no metadata-only verb, and list on every
// resource would include Secrets.
func rbac() []rbacv1.PolicyRule {
	return append([]rbacv1.PolicyRule{
		{APIGroups: []string{kustomizations.Group}, Resources: []string{kustomizations.Resource}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{helmReleases.Group}, Resources: []string{helmReleases.Resource}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{artifactGenerators.Group}, Resources: []string{artifactGenerators.Resource}, Verbs: []string{"list", "watch"}},
	}, gitops.AuditRBAC()...)
}
