package manifests

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// StaticSuffix ends the name of every object the API server reads from
// its own disk (manifest-based admission control, KEP-5793): it refuses
// such names through the API, and loads only such names from files
// (k8s.io/apiserver pkg/admission/plugin/manifest/validation.go,
// StaticConfigSuffix).
const StaticSuffix = ".static.k8s.io"

// StaticOptions say how to render Steward's static admission
// configuration.
type StaticOptions struct {
	Options
	// URL is where the API server reaches Steward ("https://host:port"):
	// static webhooks may not name a Service (k8s.io/kubernetes
	// pkg/admission/plugin/webhook/manifest/loader, via k8s.io/apiserver
	// pkg/admission/plugin/webhook/manifest/loader/loader.go
	// ValidateWebhookClientConfig), and nothing can inject a caBundle into
	// a file.
	URL string
	// CABundle is the PEM CA that signed Steward's serving certificate.
	CABundle []byte
	// Dir is the absolute directory the API server reads the files from,
	// for the AdmissionConfiguration's staticManifestsDir fields.
	Dir string
	// Writers may change Steward's API-registered webhook configurations
	// besides Steward's own service account: the installer's identity.
	Writers []string
}

// Static renders, keyed by path under Dir: the two webhook
// configurations (validating/ and mutating/, one directory per admission
// plugin, since each plugin refuses the other's kind), a
// ValidatingAdmissionPolicy with its binding (policies/) that refuses
// changes to Steward's API-registered configurations except by Steward
// and Writers, and admission-configuration.yaml, the file to pass to
// kube-apiserver --admission-control-config-file.
func Static(o StaticOptions) (map[string][]byte, error) {
	in, cfg := o.install()
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("static URL %q: want https://host[:port]", o.URL)
	}
	if !path.IsAbs(o.Dir) {
		return nil, fmt.Errorf("static directory %q: the API server needs an absolute path", o.Dir)
	}
	target := rule.Target{Namespace: in.ns, Service: in.name, URL: o.URL}
	name := in.name + StaticSuffix
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
	}
	for _, c := range webhooks.Rules(cfg) {
		spec := c.Rule.Spec()
		for _, wh := range spec.Webhooks {
			if wh.DynamicRules != nil {
				// Its kinds follow the cluster's CRDs and XRDs, which no
				// file on the API server's disk can.
				continue
			}
			if spec.Type == rule.Mutating {
				e := wh.MutatingWebhook(target)
				e.ClientConfig.CABundle = o.CABundle
				mutating.Webhooks = append(mutating.Webhooks, e)
			} else {
				e := wh.ValidatingWebhook(target)
				e.ClientConfig.CABundle = o.CABundle
				validating.Webhooks = append(validating.Webhooks, e)
			}
		}
	}
	files := map[string][]byte{}
	add := func(p string, objs ...any) error {
		data, err := toYAML(objs...)
		if err != nil {
			return fmt.Errorf("rendering %s: %w", p, err)
		}
		files[p] = data
		return nil
	}
	writers := append([]string{"system:serviceaccount:" + in.ns + ":" + in.name}, o.Writers...)
	policy, binding := in.registrationPolicy(writers)
	for p, objs := range map[string][]any{
		"validating/" + in.name + ".yaml": {validating},
		"mutating/" + in.name + ".yaml":   {mutating},
		"policies/" + in.name + ".yaml":   {policy, binding},
		"admission-configuration.yaml":    {admissionConfiguration(o.Dir)},
	} {
		if err := add(p, objs...); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// registrationPolicy refuses every create, update and delete of Steward's
// API-registered webhook configurations by anyone but writers. Static
// policies may match admission objects (k8s.io/apiserver
// pkg/admission/plugin/policy/generic/plugin.go, Dispatch), and webhook
// configurations are never sent to webhooks, so only a policy the API
// server reads from its disk can guard them.
func (in install) registrationPolicy(writers []string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := in.name + "-registration" + StaticSuffix
	quoted := make([]string, len(writers))
	for i, w := range writers {
		quoted[i] = strconv.Quote(w)
	}
	list := "[" + strings.Join(quoted, ", ") + "]"
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: []string{in.name},
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"admissionregistration.k8s.io"},
							APIVersions: []string{"*"},
							Resources:   []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "request.userInfo.username in " + list,
				MessageExpression: `"Steward's webhook configuration " + request.name + " may be changed only by Steward and its installer (` +
					strings.ReplaceAll(strings.Join(writers, ", "), `"`, ``) + `), not by " + request.userInfo.username + ": switch a guard off with mode off in Steward's configuration"`,
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: in.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// admissionConfiguration points each admission plugin at its directory
// under dir (the AdmissionConfiguration of apiserver.config.k8s.io/v1,
// with the staticManifestsDir of k8s.io/apiserver's WebhookAdmission and
// ValidatingAdmissionPolicyConfiguration, beta and on by default in
// Kubernetes 1.37 behind the ManifestBasedAdmissionControlConfig feature
// gate).
func admissionConfiguration(dir string) map[string]any {
	plugin := func(name, kind, sub string) map[string]any {
		return map[string]any{"name": name, "configuration": map[string]any{
			"apiVersion": "apiserver.config.k8s.io/v1", "kind": kind, "staticManifestsDir": path.Join(dir, sub),
		}}
	}
	return map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AdmissionConfiguration",
		"plugins": []any{
			plugin("ValidatingAdmissionWebhook", "WebhookAdmissionConfiguration", "validating"),
			plugin("MutatingAdmissionWebhook", "WebhookAdmissionConfiguration", "mutating"),
			plugin("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyConfiguration", "policies"),
		},
	}
}
