package manifests

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/certs"
	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/rulessync"
)

// The security tests read what an installer applies: each overlay built by
// kubectl's kustomize from the committed YAML, not the Go objects that
// render it, so a patch in an overlay cannot slip past them.

// installed is one overlay, built, with its RBAC and Deployments typed.
type installed struct {
	overlay      string
	clusterRoles []rbacv1.ClusterRole
	roles        []rbacv1.Role
	bindings     []rbacv1.ClusterRoleBinding
	roleBindings []rbacv1.RoleBinding
	deployments  []appsv1.Deployment
}

func kustomizeBuild(t *testing.T, overlay string) installed {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", filepath.Join("overlays", overlay)).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize overlays/%s: %v\n%s", overlay, err, out)
	}
	in := installed{overlay: overlay}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("overlays/%s: %v", overlay, err)
		}
		var target any
		switch u.GetKind() {
		case "ClusterRole":
			in.clusterRoles = append(in.clusterRoles, rbacv1.ClusterRole{})
			target = &in.clusterRoles[len(in.clusterRoles)-1]
		case "Role":
			in.roles = append(in.roles, rbacv1.Role{})
			target = &in.roles[len(in.roles)-1]
		case "ClusterRoleBinding":
			in.bindings = append(in.bindings, rbacv1.ClusterRoleBinding{})
			target = &in.bindings[len(in.bindings)-1]
		case "RoleBinding":
			in.roleBindings = append(in.roleBindings, rbacv1.RoleBinding{})
			target = &in.roleBindings[len(in.roleBindings)-1]
		case "Deployment", "DaemonSet", "StatefulSet", "Pod", "Job", "CronJob":
			if u.GetKind() != "Deployment" {
				t.Fatalf("overlays/%s renders a %s; the security tests only know Deployments", overlay, u.GetKind())
			}
			in.deployments = append(in.deployments, appsv1.Deployment{})
			target = &in.deployments[len(in.deployments)-1]
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, target, true); err != nil {
			t.Fatalf("overlays/%s: %s %s: %v", overlay, u.GetKind(), u.GetName(), err)
		}
	}
	return in
}

var overlayNames = []string{"cert-manager", "self-managed-certs"}

// declaredPermissions is everything Steward's code says it uses in an
// overlay: what the cluster cache and each rule's Spec declare and, in
// self-managed mode, what
// the certificate manager needs, and the Events for refused writes.
func declaredPermissions(overlay string) (cluster, namespaced []rbacv1.PolicyRule) {
	cluster = append(webhooks.ClusterCacheRBAC(), webhooks.EventsRBAC(config.Defaults(webhooks.Sections()))...)
	for _, c := range webhooks.Rules(config.Defaults(webhooks.Sections())) {
		cluster = append(cluster, c.Rule.Spec().PolicyRules()...)
	}
	cluster = append(cluster, metricsAuthRules...)
	cluster = append(cluster, audit.RBAC(config.Defaults(webhooks.Sections()).Audit)...)
	namespaced = append(namespaced, audit.LeaderElectionRBAC()...)
	reg := rulessync.Registration{Validating: Name, Mutating: Name, Target: rule.Target{Namespace: DefaultNamespace, Service: Name}, Deployment: Name}
	cluster = append(cluster, rulessync.RBAC(reg)...)
	namespaced = append(namespaced, rulessync.NamespaceRBAC(reg)...)
	if overlay == "self-managed-certs" {
		c, n := certs.SelfManagedRBAC()
		cluster = append(cluster, c...)
		namespaced = append(namespaced, n...)
	}
	return cluster, namespaced
}

// grant is one verb on one resource (and name, if restricted).
type grant struct {
	group, resource, verb, name string
}

func (g grant) String() string {
	s := fmt.Sprintf("%s %s.%s", g.verb, g.resource, g.group)
	if g.group == "" {
		s = fmt.Sprintf("%s %s", g.verb, g.resource)
	}
	if g.name != "" {
		s += "/" + g.name
	}
	return s
}

func expand(rules []rbacv1.PolicyRule) []grant {
	var out []grant
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out = append(out, grant{g, res, v, n})
					}
				}
			}
		}
	}
	return out
}

// covers says whether the declared grants include g; a declared grant
// without a name covers every name.
func covers(declared []grant, g grant) bool {
	for _, d := range declared {
		if d.group == g.group && d.resource == g.resource && d.verb == g.verb && (d.name == "" || d.name == g.name) {
			return true
		}
	}
	return false
}

// writeVerbs change state; escalation verbs hand out more than Steward has.
var (
	writeVerbs      = []string{"create", "update", "patch", "delete", "deletecollection"}
	escalationVerbs = []string{"escalate", "bind", "impersonate", "approve", "sign"}
	// webhookConfigs are the only cluster-scoped objects Steward may write,
	// and only its own, by name (self-managed certificates inject the CA;
	// claimguard keeps its create and delete webhooks' rules).
	webhookConfigs = []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
)

// checkPolicyRule reports what a single rule grants beyond least privilege.
// namespaced is true for a Role's rules.
func checkPolicyRule(where string, r rbacv1.PolicyRule, namespaced bool) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, where+": "+fmt.Sprintf(format, args...))
	}
	if len(r.NonResourceURLs) > 0 {
		bad("grants non-resource URLs %v", r.NonResourceURLs)
	}
	for _, field := range [][]string{r.Verbs, r.APIGroups, r.Resources} {
		for _, v := range field {
			if v == "*" || strings.HasSuffix(v, "/*") {
				bad("uses the wildcard %q (verbs %v, apiGroups %v, resources %v)", v, r.Verbs, r.APIGroups, r.Resources)
			}
		}
	}
	for _, v := range r.Verbs {
		if slices.Contains(escalationVerbs, v) {
			bad("grants %q, which lets Steward hand out more than it has", v)
		}
	}
	writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) })
	if isReview(r) {
		// TokenReviews and SubjectAccessReviews store nothing: creating
		// one asks the API server a question (system:auth-delegator grants
		// the same for delegated authentication of /metrics).
		return problems
	}
	if isEventNotes(r) {
		// Events are notes about objects, not the objects: Steward records
		// one on an object a service account was refused a write to, and
		// patches it to count repeats. It never reads, updates or deletes
		// them.
		return problems
	}
	if !namespaced && isRegistrationCreate(r) {
		return problems
	}
	if isOwnReports(r) || (namespaced && isOwnLease(r)) {
		// The audit's own reports, and the Lease that elects the
		// replica writing them: created (which no name can limit), and
		// otherwise written only by name.
		return problems
	}
	for _, res := range r.Resources {
		isSecret := r.APIGroups != nil && slices.Contains(r.APIGroups, "") && (res == "secrets" || strings.HasPrefix(res, "secrets/"))
		isOwnWebhookConfig := slices.Contains(r.APIGroups, "admissionregistration.k8s.io") && slices.Contains(webhookConfigs, res)
		switch {
		case isSecret && !namespaced:
			bad("grants secrets cluster-wide: Steward may only touch its own Secret, in a Role")
		case isSecret && !slices.Equal(r.ResourceNames, []string{SecretName}):
			bad("grants secrets %v, want only Steward's own Secret %s by name", r.ResourceNames, SecretName)
		case writes && !isSecret && !isOwnWebhookConfig:
			bad("grants write verbs %v on %s: Steward writes only its own webhook configurations (and its own Secret in self-managed mode)", r.Verbs, res)
		case writes && isOwnWebhookConfig && !slices.Equal(r.ResourceNames, []string{Name}):
			bad("grants write verbs %v on %s %v, want only Steward's own, %q, by name", r.Verbs, res, r.ResourceNames, Name)
		}
		if strings.Contains(res, "/") {
			// Subresources (pods/exec, serviceaccounts/token, .../scale) are
			// never needed: Steward reads metadata through informers.
			bad("grants the subresource %s", res)
		}
	}
	if writes && slices.Contains(r.Verbs, "create") {
		bad("grants create on %v: create cannot be limited by name", r.Resources)
	}
	return problems
}

// isEventNotes says whether r grants only create and patch on
// events.k8s.io Events, cluster-wide and not in a Role.
func isEventNotes(r rbacv1.PolicyRule) bool {
	return slices.Equal(r.APIGroups, []string{"events.k8s.io"}) && slices.Equal(r.Resources, []string{"events"}) &&
		slices.Equal(r.Verbs, []string{"create", "patch"}) && len(r.ResourceNames) == 0
}

// isOwnReports says whether r grants writes on the audit's reports only
// (PolicyReports, OpenReports): created where a namespace has findings,
// updated and deleted only under Steward's report name.
func isOwnReports(r rbacv1.PolicyRule) bool {
	own := false
	for _, api := range []audit.ReportAPI{audit.PolicyReportAPI(), audit.OpenReportsAPI()} {
		own = own || (slices.Equal(r.APIGroups, []string{api.Namespaced.Group}) &&
			slices.Equal(r.Resources, []string{api.Namespaced.Resource, api.Cluster.Resource}))
	}
	if !own {
		return false
	}
	return (slices.Equal(r.Verbs, []string{"list", "create"}) && len(r.ResourceNames) == 0) ||
		(slices.Equal(r.Verbs, []string{"update", "delete"}) && slices.Equal(r.ResourceNames, []string{audit.ReportName}))
}

// isOwnLease says whether r grants only what leader election needs on
// Leases, in a Role: create, and get and update of Steward's own by name.
func isOwnLease(r rbacv1.PolicyRule) bool {
	if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) {
		return false
	}
	return (slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0) ||
		(slices.Equal(r.Verbs, []string{"get", "update"}) && (slices.Equal(r.ResourceNames, []string{audit.LeaseName}) || slices.Equal(r.ResourceNames, []string{rulessync.LeaseName})))
}

// isRegistrationCreate says whether r grants only create on the two kinds
// of webhook configuration: re-creating Steward's own when they were
// deleted (steward serve --keep-registration). Create is the one write RBAC
// cannot narrow to a name; docs/security.md says what it allows.
func isRegistrationCreate(r rbacv1.PolicyRule) bool {
	return slices.Equal(r.APIGroups, []string{"admissionregistration.k8s.io"}) && slices.Equal(r.Resources, webhookConfigs) &&
		slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0
}

// isReview says whether r grants only create on TokenReviews or
// SubjectAccessReviews.
func isReview(r rbacv1.PolicyRule) bool {
	review := (slices.Equal(r.APIGroups, []string{"authentication.k8s.io"}) && slices.Equal(r.Resources, []string{"tokenreviews"})) ||
		(slices.Equal(r.APIGroups, []string{"authorization.k8s.io"}) && slices.Equal(r.Resources, []string{"subjectaccessreviews"}))
	return review && slices.Equal(r.Verbs, []string{"create"}) && len(r.ResourceNames) == 0
}

// checkRBAC reports every way an installed overlay's RBAC exceeds what
// Steward declares it uses, or falls short of it.
func checkRBAC(in installed) []string {
	var problems []string
	ownRoles := map[string]bool{}
	var granted, grantedNamespaced []grant
	aggregated := false
	for _, cr := range in.clusterRoles {
		ownRoles["ClusterRole/"+cr.Name] = true
		for label := range cr.Labels {
			if strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") {
				problems = append(problems, fmt.Sprintf("ClusterRole %s carries %s: Steward's permissions would be added to Kubernetes' user-facing roles", cr.Name, label))
			}
		}
		if cr.AggregationRule != nil {
			aggregated = true
			for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
				for k := range sel.MatchLabels {
					if !strings.HasPrefix(k, "steward.dev/") {
						problems = append(problems, fmt.Sprintf("ClusterRole %s aggregates roles labelled %s: only Steward's own steward.dev/ labels may feed it", cr.Name, k))
					}
				}
				if len(sel.MatchExpressions) > 0 || len(sel.MatchLabels) == 0 {
					problems = append(problems, fmt.Sprintf("ClusterRole %s aggregates with a selector that is not an exact steward.dev/ label: %+v", cr.Name, sel))
				}
			}
		}
		if cr.Name == MetricsReaderRole {
			// Bound to Prometheus by the installer, never to Steward.
			if !reflect.DeepEqual(cr.Rules, metricsReaderRules) {
				problems = append(problems, fmt.Sprintf("ClusterRole %s grants %+v, want only get on /metrics", cr.Name, cr.Rules))
			}
			continue
		}
		for i, r := range cr.Rules {
			problems = append(problems, checkPolicyRule(fmt.Sprintf("ClusterRole %s rule %d", cr.Name, i), r, false)...)
		}
		granted = append(granted, expand(cr.Rules)...)
	}
	for _, ro := range in.roles {
		ownRoles["Role/"+ro.Name] = true
		if ro.Namespace != DefaultNamespace {
			problems = append(problems, fmt.Sprintf("Role %s is in namespace %q, want Steward's own %s", ro.Name, ro.Namespace, DefaultNamespace))
		}
		for i, r := range ro.Rules {
			problems = append(problems, checkPolicyRule(fmt.Sprintf("Role %s rule %d", ro.Name, i), r, true)...)
		}
		grantedNamespaced = append(grantedNamespaced, expand(ro.Rules)...)
	}
	checkBinding := func(kind, name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		if !ownRoles[ref.Kind+"/"+ref.Name] {
			problems = append(problems, fmt.Sprintf("%s %s binds %s %s, which is not one of Steward's own roles", kind, name, ref.Kind, ref.Name))
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Name != Name || s.Namespace != DefaultNamespace {
				problems = append(problems, fmt.Sprintf("%s %s grants to %s %s/%s, want only the ServiceAccount %s/%s", kind, name, s.Kind, s.Namespace, s.Name, DefaultNamespace, Name))
			}
		}
	}
	for _, b := range in.bindings {
		checkBinding("ClusterRoleBinding", b.Name, b.RoleRef, b.Subjects)
	}
	for _, b := range in.roleBindings {
		if b.Namespace != DefaultNamespace {
			problems = append(problems, fmt.Sprintf("RoleBinding %s is in namespace %q, want %s", b.Name, b.Namespace, DefaultNamespace))
		}
		checkBinding("RoleBinding", b.Name, b.RoleRef, b.Subjects)
	}

	cluster, namespaced := declaredPermissions(in.overlay)
	declared, declaredNamespaced := expand(cluster), expand(namespaced)
	for _, g := range granted {
		if !covers(declared, g) {
			problems = append(problems, fmt.Sprintf("the ClusterRoles grant %s, which no rule declares it uses", g))
		}
	}
	for _, g := range grantedNamespaced {
		if !covers(declaredNamespaced, g) {
			problems = append(problems, fmt.Sprintf("the Roles grant %s, which no rule declares it uses", g))
		}
	}
	// The other way round: a declared permission that is not granted makes
	// Steward fail (its informers never sync, so it never becomes ready).
	// Aggregated roles are filled by the cluster, so they cannot be checked.
	if !aggregated {
		for _, g := range declared {
			if !covers(granted, g) {
				problems = append(problems, fmt.Sprintf("a rule declares it uses %s, but the ClusterRoles do not grant it", g))
			}
		}
	}
	for _, g := range declaredNamespaced {
		if !covers(grantedNamespaced, g) {
			problems = append(problems, fmt.Sprintf("Steward declares it uses %s in %s, but the Roles do not grant it", g, DefaultNamespace))
		}
	}
	return problems
}

// TestRenderedRBACIsLeastPrivilege proves, for each overlay as installed,
// that Steward asks for nothing beyond what its rules and certificate mode
// declare they use: no wildcards, no Secrets except its own by name in
// self-managed mode, no writes except its own webhook configurations by
// name, no escalation verbs, bindings only to its own ServiceAccount.
func TestRenderedRBACIsLeastPrivilege(t *testing.T) {
	for _, overlay := range overlayNames {
		t.Run(overlay, func(t *testing.T) {
			in := kustomizeBuild(t, overlay)
			if len(in.clusterRoles) == 0 || len(in.bindings) == 0 {
				t.Fatalf("overlays/%s renders no ClusterRole or ClusterRoleBinding", overlay)
			}
			for _, p := range checkRBAC(in) {
				t.Error(p)
			}
			secrets := 0
			for _, g := range expandAll(in) {
				if g.resource == "secrets" {
					secrets++
				}
			}
			if overlay == "cert-manager" && secrets > 0 {
				t.Errorf("with cert-manager the kubelet mounts the serving Secret: Steward needs no access to Secrets, but is granted %d", secrets)
			}
		})
	}
}

func expandAll(in installed) []grant {
	var out []grant
	for _, cr := range in.clusterRoles {
		out = append(out, expand(cr.Rules)...)
	}
	for _, r := range in.roles {
		out = append(out, expand(r.Rules)...)
	}
	return out
}

// TestRBACCheckCatchesExcess proves the least-privilege check fails on the
// mistakes it exists for, each added to the real self-managed install.
func TestRBACCheckCatchesExcess(t *testing.T) {
	tests := map[string]struct {
		reason string
		add    rbacv1.PolicyRule
		role   bool
		want   string
	}{
		"WildcardVerb": {
			reason: "a wildcard verb grants every future verb too",
			add:    rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}},
			want:   `wildcard "*"`,
		},
		"AllSecrets": {
			reason: "reading every Secret in the cluster is the classic webhook over-grant",
			add:    rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
			want:   "grants secrets cluster-wide",
		},
		"OtherSecretInRole": {
			reason: "only Steward's own Secret, by name",
			add:    rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"other"}, Verbs: []string{"get"}},
			role:   true,
			want:   "want only Steward's own Secret",
		},
		"WriteOtherObjects": {
			reason: "Steward never writes workloads",
			add:    rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"patch"}},
			want:   "grants write verbs [patch] on deployments",
		},
		"WriteEveryWebhookConfiguration": {
			reason: "writing any webhook configuration could disable other admission controllers",
			add:    rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"update"}},
			want:   "want only Steward's own",
		},
		"Undeclared": {
			reason: "a read no rule declares is a read Steward does not need",
			add:    rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}},
			want:   "list configmaps, which no rule declares",
		},
		"Escalation": {
			reason: "impersonate lets Steward act as anyone",
			add:    rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}},
			want:   `grants "impersonate"`,
		},
	}
	base := kustomizeBuild(t, "self-managed-certs")
	if problems := checkRBAC(base); len(problems) > 0 {
		t.Fatalf("the real install already fails the check: %v", problems)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := base
			in.clusterRoles = slices.Clone(base.clusterRoles)
			in.roles = slices.Clone(base.roles)
			if tc.role {
				in.roles[0].Rules = append(slices.Clone(in.roles[0].Rules), tc.add)
			} else {
				in.clusterRoles[0].Rules = append(slices.Clone(in.clusterRoles[0].Rules), tc.add)
			}
			problems := checkRBAC(in)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("%s: want a problem containing %q, got %q", tc.reason, tc.want, problems)
			}
		})
	}
}

// checkPodSecurity reports every way a Deployment's pod could run with more
// than it needs: as root, with privilege escalation, a writable root
// filesystem, any Linux capability, host namespaces or host paths.
func checkPodSecurity(d appsv1.Deployment) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("Deployment %s: ", d.Name)+fmt.Sprintf(format, args...))
	}
	spec := d.Spec.Template.Spec
	pod := spec.SecurityContext
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	podNonRoot := pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
	if pod.RunAsUser != nil && *pod.RunAsUser == 0 {
		bad("pod runs as user 0")
	}
	if pod.RunAsGroup != nil && *pod.RunAsGroup == 0 {
		bad("pod runs as group 0")
	}
	if pod.SeccompProfile == nil || (pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault && pod.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost) {
		bad("pod has no RuntimeDefault seccomp profile")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		bad("pod shares a host namespace (network %v, pid %v, ipc %v)", spec.HostNetwork, spec.HostPID, spec.HostIPC)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad("volume %s mounts the host path %s", v.Name, v.HostPath.Path)
		}
	}
	containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
	if len(containers) == 0 {
		bad("has no containers")
	}
	for _, c := range containers {
		sc := c.SecurityContext
		if sc == nil {
			bad("container %s has no securityContext", c.Name)
			continue
		}
		nonRoot := podNonRoot
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if !nonRoot {
			bad("container %s may run as root (runAsNonRoot is not true)", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			bad("container %s runs as user 0", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("container %s allows privilege escalation", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			bad("container %s is privileged", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("container %s has a writable root filesystem", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			bad("container %s does not drop ALL capabilities", c.Name)
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			bad("container %s adds capabilities %v", c.Name, sc.Capabilities.Add)
		}
		if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
			bad("container %s unmasks /proc", c.Name)
		}
	}
	return problems
}

// TestRenderedDeploymentIsHardened proves, for each overlay as installed,
// that Steward runs as a non-root user, cannot escalate privileges, has a
// read-only root filesystem and no Linux capabilities.
func TestRenderedDeploymentIsHardened(t *testing.T) {
	for _, overlay := range overlayNames {
		t.Run(overlay, func(t *testing.T) {
			in := kustomizeBuild(t, overlay)
			if len(in.deployments) != 1 {
				t.Fatalf("overlays/%s renders %d Deployments, want 1", overlay, len(in.deployments))
			}
			for _, p := range checkPodSecurity(in.deployments[0]) {
				t.Error(p)
			}
		})
	}
}

// TestPodSecurityCheckCatchesWeakenedContexts proves the hardening check
// fails on each weakening, applied to the real Deployment.
func TestPodSecurityCheckCatchesWeakenedContexts(t *testing.T) {
	yes, no, root := true, false, int64(0)
	tests := map[string]struct {
		reason string
		weaken func(*corev1.PodSpec)
		want   string
	}{
		"RunsAsRoot": {
			reason: "a root process that escapes the container is root on the node",
			weaken: func(s *corev1.PodSpec) { s.SecurityContext.RunAsUser = &root },
			want:   "pod runs as user 0",
		},
		"RunAsNonRootOff": {
			reason: "without runAsNonRoot the kubelet starts an image whose USER is root",
			weaken: func(s *corev1.PodSpec) {
				s.SecurityContext.RunAsNonRoot = &no
				s.Containers[0].SecurityContext.RunAsNonRoot = nil
			},
			want: "may run as root",
		},
		"PrivilegeEscalation": {
			reason: "setuid binaries could regain privileges",
			weaken: func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes },
			want:   "allows privilege escalation",
		},
		"WritableRootFilesystem": {
			reason: "a writable root filesystem lets an attacker persist tools",
			weaken: func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &no },
			want:   "writable root filesystem",
		},
		"AddsCapability": {
			reason: "Steward needs no Linux capability, not even to bind its ports (> 1024)",
			weaken: func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
			},
			want: "adds capabilities",
		},
		"KeepsDefaultCapabilities": {
			reason: "the runtime's default capabilities include CHOWN, SETUID and more",
			weaken: func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities.Drop = nil },
			want:   "does not drop ALL",
		},
		"Privileged": {
			reason: "privileged is every capability and every device",
			weaken: func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Privileged = &yes },
			want:   "is privileged",
		},
		"HostNetwork": {
			reason: "host networking exposes the node's interfaces",
			weaken: func(s *corev1.PodSpec) { s.HostNetwork = true },
			want:   "shares a host namespace",
		},
	}
	base := kustomizeBuild(t, "cert-manager").deployments[0]
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := *base.DeepCopy()
			tc.weaken(&d.Spec.Template.Spec)
			problems := checkPodSecurity(d)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("%s: want a problem containing %q, got %q", tc.reason, tc.want, problems)
			}
		})
	}
}
