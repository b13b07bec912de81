package installplanguard

import (
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Config is the installplanguard section of Steward's configuration file.
type Config struct {
	// Mode is how the rule's denials take effect.
	Mode rule.Mode `json:"mode,omitempty"`
	// OLMUsers are OLM's own identities. OLM creates, updates and garbage
	// collects InstallPlans as part of its work, so they are never refused;
	// their requests do not even reach Steward (matchConditions).
	OLMUsers []string `json:"olmUsers,omitempty"`
	// ClusterControllerUsers are Kubernetes controllers that delete
	// InstallPlans for a reason that is already settled: the garbage
	// collector deletes a plan only once every owning Subscription is gone,
	// and the namespace controller deletes everything in a namespace that
	// is being deleted. Refusing them would block those deletions forever.
	ClusterControllerUsers []string `json:"clusterControllerUsers,omitempty"`
}

// defaultOLMUsers are the service accounts OLM's olm-operator and
// catalog-operator run as, upstream (namespace olm) and on OpenShift.
var defaultOLMUsers = []string{
	"system:serviceaccount:olm:olm-operator-serviceaccount",
	"system:serviceaccount:openshift-operator-lifecycle-manager:olm-operator-serviceaccount",
}

// defaultClusterControllerUsers are kube-controller-manager's garbage
// collector and namespace controller, as they authenticate when the
// controller manager runs with --use-service-account-credentials (kubeadm
// and most distributions do).
var defaultClusterControllerUsers = []string{
	"system:serviceaccount:kube-system:generic-garbage-collector",
	"system:serviceaccount:kube-system:namespace-controller",
}

// Default fills unset settings.
func (c *Config) Default() {
	if c.Mode == "" {
		c.Mode = rule.Enforce
	}
	if len(c.OLMUsers) == 0 {
		c.OLMUsers = append([]string(nil), defaultOLMUsers...)
	}
	if len(c.ClusterControllerUsers) == 0 {
		c.ClusterControllerUsers = append([]string(nil), defaultClusterControllerUsers...)
	}
}

// Validate reports invalid settings by field path.
func (c *Config) Validate(path *field.Path) field.ErrorList {
	errs := c.Mode.Validate(path.Child("mode"))
	errs = append(errs, validateUsers(path.Child("olmUsers"), c.OLMUsers)...)
	return append(errs, validateUsers(path.Child("clusterControllerUsers"), c.ClusterControllerUsers)...)
}

func validateUsers(path *field.Path, users []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, u := range users {
		switch {
		case u == "":
			errs = append(errs, field.Required(path.Index(i), "a user name"))
		case strings.TrimSpace(u) != u || strings.ContainsFunc(u, unicode.IsControl):
			errs = append(errs, field.Invalid(path.Index(i), u, "must not have surrounding spaces or control characters"))
		case seen[u]:
			errs = append(errs, field.Duplicate(path.Index(i), u))
		}
		seen[u] = true
	}
	return errs
}

// RuleMode is the configured mode (rule.Settings).
func (c *Config) RuleMode() rule.Mode { return c.Mode }

var _ rule.Settings = (*Config)(nil)
