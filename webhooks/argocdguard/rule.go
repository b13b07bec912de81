// Package argocdguard refuses hand edits to objects Argo CD syncs, as
// fleetguard does for Fleet: without self-heal a kubectl edit of a
// Git-managed object stays until the next sync, and argocd-server's "edit
// live manifest" is a hand edit too. It is the GitOps engine
// (webhooks/internal/gitops) with Argo CD's resolver: the tracking id
// must name the very object it sits on, and its Application must exist.
package argocdguard

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and log field.
const Name = "argocdguard"

// Rule is the argocdguard admission handler.
type Rule struct {
	guard    *gitops.Guard
	resolver *resolver
	// people are the service accounts that write people's edits
	// (argocd-server), unless uiEditsAreGitOps.
	people []string
}

var _ rule.Rule = (*Rule)(nil)

// New builds the rule from its configuration and the global break-glass
// group, which denial messages name. It touches no cluster: until
// SetupWithManager (or WithApplications) gives it the Applications'
// cache, every Application is "not found".
func New(c Config, breakGlassGroup string) *Rule {
	c.Default()
	r := &Rule{resolver: newResolver(c)}
	if !c.UIEditsAreGitOps {
		// argocd-server writes people's UI edits.
		r.people = c.ServerUsers
	}
	r.guard = gitops.New(gitops.Options{
		Rule: Name, Tool: "Argo CD", AgentName: "Argo CD's application controller", Applier: "Argo CD",
		Settings: c.Settings, Agent: c.writers(), People: r.people, BreakGlassGroup: breakGlassGroup, Markers: markers(c),
		OptOut:  gitops.OptOut{Paths: optOutPaths, Groups: c.OptOutGroups},
		Records: records,
	}, r.resolver)
	return r
}

// Handle decides one admission request as if the rule were enforced.
func (r *Rule) Handle(ctx context.Context, req *rule.Request) admission.Response {
	return r.guard.Handle(ctx, req)
}

// WithApplications sets where Applications are looked up; tests and
// offline use pass their own.
func (r *Rule) WithApplications(c gitops.OwnerCache) *Rule {
	r.resolver.Cache = c // AppProjects too
	return r
}

// SetupWithManager caches Applications, trimmed to what decisions read
// and the objects their status lists (keepApplication): never the objects
// themselves. The kind is cached once its CRD is served, so a cluster
// without Argo CD leaves the rule idle, and Argo CD installed after
// Steward started is guarded once the informer syncs, without a restart.
func (r *Rule) SetupWithManager(mgr manager.Manager, cluster *clustercache.Cache) error {
	// AppProjects are few and small; they are cached whether or not
	// syncImpersonation is set, so that setting it takes effect on a
	// configuration reload and the RBAC does not follow the setting.
	return r.resolver.SetUp(mgr, cluster, Name, "applications", map[schema.GroupResource]clustercache.Spec{
		applications: {Transform: keepApplication},
		appProjects:  {Transform: keepProject},
	})
}

var _ clustercache.ManagerSetup = (*Rule)(nil)

// Inherit makes r read Applications from the cache running was set up
// with; everything else is r's own settings.
func (r *Rule) Inherit(running rule.Rule) error {
	return gitops.Inherit(Name, running, func(old *Rule) { r.resolver.Caches = old.resolver.Caches })
}

var _ rule.Inheritor = (*Rule)(nil)

// Collector reports the Applications' informer as
// steward_watched_kinds{rule="argocdguard",...}.
func (r *Rule) Collector() prometheus.Collector { return r.resolver.Collector() }

var _ rule.MetricsCollector = (*Rule)(nil)

// rbac is what the cache reads, Applications and AppProjects, and what the audit lists
// besides them: the workloads (gitops.AuditRBAC), read-only. The audit
// lists no other kind an Application's status holds: RBAC has no
// metadata-only verb, and list on every resource would include Secrets.
func rbac() []rbacv1.PolicyRule {
	return append([]rbacv1.PolicyRule{{APIGroups: []string{applications.Group}, Resources: []string{applications.Resource, appProjects.Resource}, Verbs: []string{"list", "watch"}}},
		gitops.AuditRBAC()...)
}

// markers are Argo CD's tracking id and, where configured, its tracking
// label, as the guard and its webhook's conditions read them.
func markers(c Config) []object.Pointer {
	out := []object.Pointer{{"metadata", "annotations", AnnotationTrackingID}, {"metadata", "annotations", AnnotationInstallationID}}
	if c.TrackingLabel != "" {
		out = append(out, object.Pointer{"metadata", "labels", c.TrackingLabel})
	}
	return out
}
