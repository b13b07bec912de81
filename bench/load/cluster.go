package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/bench"
	"github.com/stewardhq/steward/e2e/harness"
)

// cluster is the environment under load: the harness's API server, etcd
// and Steward, the allow-all webhook, and clients for the identities the
// workloads write as.
type cluster struct {
	env              *harness.Env
	users            map[string]*bench.Clients // by user name; "" is the admin
	slow             dynamic.Interface         // the admin, for cleanups of thousands of objects
	apiPID, etcdPID  int
	pprofAddr        string // Steward's pprof endpoint (host:port)
	aa               *allowAll
	steward, allowed harness.Webhooks
	policy           *admissionregistrationv1.ValidatingAdmissionPolicy
	binding          *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	current          configID
}

// startCluster starts the API server and etcd through the harness,
// prepares them for seeding, and starts Steward (every rule at its
// defaults, pprof on a local port), then the allow-all webhook with a
// certificate from the same generator as Steward's. Steward's webhook
// configurations are registered as `steward manifests` renders them, or as
// registered has them when it is not nil (-webhooks).
func startCluster(ctx context.Context, workDir string, registered *harness.Webhooks) (c *cluster, err error) {
	env, err := harness.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	c = &cluster{env: env, users: map[string]*bench.Clients{}, current: cfgSteward, slow: bench.NewClients(env, "", nil, 15*time.Minute).Dyn}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	for user, groups := range map[string][]string{"": nil, bench.AgentUser: nil, bench.HumanUser: bench.HumanGroups(), bench.CrossplaneUser: nil, bench.FluxUser: nil} {
		c.users[user] = bench.NewClients(env, user, groups, time.Minute)
	}
	if c.apiPID, c.etcdPID, err = env.ControlPlanePIDs(); err != nil {
		return c, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return c, err
	}
	c.pprofAddr = "127.0.0.1:" + strconv.Itoa(port)
	if err := bench.Prepare(ctx, env); err != nil {
		return c, err
	}
	if _, err := env.StartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, Args: []string{"--pprof-bind-address", c.pprofAddr}, ProvideCerts: true, Webhooks: registered}); err != nil {
		return c, fmt.Errorf("starting steward: %w", err)
	}
	if c.steward, err = c.liveWebhooks(ctx, time.Minute); err != nil {
		return c, err
	}
	paths, err := c.steward.Paths()
	if err != nil {
		return c, err
	}
	if c.aa, err = startAllowAll(ctx, workDir, paths); err != nil {
		return c, err
	}
	if c.allowed, err = c.steward.PointedAt(allowAllName, "127.0.0.1", c.aa.port, c.aa.cert.CA); err != nil {
		return c, err
	}
	if c.policy, c.binding, err = fleetPolicy(c.steward); err != nil {
		return c, err
	}
	_, err = c.users[bench.AgentUser].Kube.CoreV1().ConfigMaps(bench.FleetNamespace).Create(ctx, bench.FleetConfigMap(policyProbeName), metav1.CreateOptions{})
	return c, err
}

func (c *cluster) stop() {
	if c.aa != nil {
		c.aa.stop()
	}
	c.env.Stop()
}

// deleteMarked is a cleanup that deletes what a workload created (labelled
// bench.Label=mark).
func deleteMarked(res schema.GroupVersionResource, namespace, mark string) func(context.Context, *cluster) error {
	return func(ctx context.Context, c *cluster) error {
		return c.slow.Resource(res).Namespace(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: bench.Label + "=" + mark})
	}
}

// liveWebhooks reads Steward's configurations as the API server holds
// them once every webhook has rules (claimguard fills in its claim and
// composite kinds at run time), keeping only their names and webhooks.
func (c *cluster) liveWebhooks(ctx context.Context, timeout time.Duration) (w harness.Webhooks, err error) {
	err = harness.Poll(ctx, timeout, func() error {
		vwc, mwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{}
		for _, obj := range []client.Object{vwc, mwc} {
			if err := c.env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, obj); err != nil {
				return fmt.Errorf("reading steward's webhook configurations: %w", err)
			}
		}
		w.Validating = &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: vwc.Name}, Webhooks: vwc.Webhooks}
		w.Mutating = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mwc.Name}, Webhooks: mwc.Webhooks}
		if slices.ContainsFunc(vwc.Webhooks, func(wh admissionregistrationv1.ValidatingWebhook) bool { return len(wh.Rules) == 0 }) {
			return errors.New("some of steward's webhooks still have no rules")
		}
		return nil
	})
	if err != nil && w.Validating != nil {
		bench.Logf("warning: %v; measuring without them", err)
		err = nil
	}
	return w, err
}

// switchTo removes the configuration in effect and installs id, returning
// once the API server uses it. Steward and the allow-all webhook run
// throughout; a configuration is which of them (or the policy) is
// registered.
func (c *cluster) switchTo(ctx context.Context, id configID) error {
	for _, step := range []struct {
		id      configID
		install bool
	}{{c.current, false}, {id, true}} {
		if step.id == cfgNone || c.current == id {
			continue
		}
		objs := map[configID][]client.Object{cfgPolicy: {c.policy, c.binding}, cfgAllowAll: c.allowed.Objects(), cfgSteward: c.steward.Objects()}[step.id]
		for _, obj := range objs {
			var err error
			if step.install {
				err = c.env.Client.Create(ctx, obj.DeepCopyObject().(client.Object))
			} else if err = c.env.Client.Delete(ctx, obj); apierrors.IsNotFound(err) {
				err = nil
			}
			if err != nil {
				return fmt.Errorf("switching from configuration (%s) to (%s): %w", c.current, id, err)
			}
		}
		var err error
		if step.id == cfgPolicy {
			err = c.waitPolicy(ctx, step.install)
		} else {
			err = c.env.WaitWebhooksEffective(ctx, time.Minute)
		}
		if err != nil {
			return err
		}
	}
	c.current = id
	return nil
}

// waitPolicy dry-runs a person's change of a Fleet-managed ConfigMap until
// the policy's denial appears (present) or disappears.
func (c *cluster) waitPolicy(ctx context.Context, present bool) error {
	human := c.users[bench.HumanUser].Kube.CoreV1().ConfigMaps(bench.FleetNamespace)
	return harness.Poll(ctx, time.Minute, func() error {
		patch := fmt.Appendf(nil, `{"data":{"probe":"%d"}}`, time.Now().UnixNano())
		_, err := human.Patch(ctx, policyProbeName, types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		switch denied := err != nil && strings.Contains(err.Error(), policyName); {
		case err != nil && !denied && !apierrors.IsForbidden(err):
			return fmt.Errorf("probing the policy: %w", err)
		case denied != present:
			return fmt.Errorf("the policy is not in effect as it should be (present=%v)", present)
		}
		return nil
	})
}

// Names of the configurations the load tool registers itself, and of the
// Fleet-managed ConfigMap that configuration switches dry-run changes of to
// see whether the policy is in effect.
const (
	policyProbeName = "bench-policy-probe"
	allowAllName    = "bench-allow-all"
	policyName      = "bench-fleetguard"
)

// policyExpression is fleetguard's core decision in CEL, as a platform team
// would write it without Steward: of a Fleet-managed object, anyone the
// match conditions let through (everyone but the Fleet agent and
// Kubernetes' controllers) may only make updates that leave its labels,
// spec and data alone. Creates carrying Fleet's label and deletes are
// refused.
const policyExpression = `request.operation == 'UPDATE' &&
  object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({}) &&
  object.?spec.orValue({}) == oldObject.?spec.orValue({}) &&
  object.?data.orValue({}) == oldObject.?data.orValue({}) &&
  object.?binaryData.orValue({}) == oldObject.?binaryData.orValue({})`

// fleetPolicy builds the ValidatingAdmissionPolicy equivalent of
// fleetguard, matched exactly as fleetguard's webhook is (its rules,
// selectors and match conditions), and its binding.
func fleetPolicy(steward harness.Webhooks) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	i := slices.IndexFunc(steward.Validating.Webhooks, func(wh admissionregistrationv1.ValidatingWebhook) bool { return wh.Name == "fleetguard.steward.dev" })
	if i < 0 {
		return nil, nil, errors.New("steward's configuration has no fleetguard.steward.dev entry to model the policy on")
	}
	fg := &steward.Validating.Webhooks[i]
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, r := range fg.Rules {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: fg.NamespaceSelector, ObjectSelector: fg.ObjectSelector,
				ResourceRules: rules, MatchPolicy: fg.MatchPolicy,
			},
			MatchConditions: fg.MatchConditions,
			Validations: []admissionregistrationv1.Validation{{
				Expression: policyExpression,
				MessageExpression: `'fleetguard policy: ' + request.kind.kind + ' ' + request.namespace + '/' + request.name +
  ' is managed by Fleet; change it in the Git repository instead'`,
				Reason: ptr.To(metav1.StatusReasonForbidden), // 403, as a webhook's denial
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policyName, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding, nil
}
