package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// configID names one admission configuration under test.
type configID string

const (
	cfgNone     configID = "a"
	cfgPolicy   configID = "b"
	cfgAllowAll configID = "c"
	cfgSteward  configID = "d"
)

// allConfigs is the order configurations are measured in first; later
// sequences alternate the direction (a b c d, d c b a, ...) so slow drift
// of the machine does not favour one configuration.
var allConfigs = []configID{cfgNone, cfgPolicy, cfgAllowAll, cfgSteward}

var configNames = map[configID]string{
	cfgNone:     "no admission webhooks",
	cfgPolicy:   "ValidatingAdmissionPolicy (CEL)",
	cfgAllowAll: "allow-all controller-runtime webhook",
	cfgSteward:  "Steward, every rule",
}

// configShort labels configurations in the chart.
var configShort = map[configID]string{
	cfgNone:     "no admission",
	cfgPolicy:   "CEL policy",
	cfgAllowAll: "allow-all webhook",
	cfgSteward:  "Steward",
}

// allowAllName names the allow-all webhook's configurations.
const allowAllName = "bench-allow-all"

// policyName names the ValidatingAdmissionPolicy and its binding.
const policyName = "bench-fleetguard"

// switcher moves the cluster between configurations. Steward and the
// allow-all webhook run throughout; a configuration is which of them (or
// the policy) is registered with the API server.
type switcher struct {
	c        *cluster
	steward  stewardWebhooks
	allowAll stewardWebhooks
	policy   *admissionregistrationv1.ValidatingAdmissionPolicy
	binding  *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	current  configID
}

func newSwitcher(c *cluster, steward stewardWebhooks, aa *allowAll) (*switcher, error) {
	s := &switcher{c: c, steward: steward, current: cfgSteward}
	s.allowAll = allowAllWebhooks(steward, aa)
	var err error
	if s.policy, s.binding, err = fleetPolicy(steward); err != nil {
		return nil, err
	}
	return s, nil
}

// allowAllWebhooks are Steward's configurations, entry for entry, with
// every entry sent to the allow-all webhook at the same path: the same
// rules, selectors, match conditions, failure policies and timeouts, so the
// API server does the same work deciding whom to call.
func allowAllWebhooks(steward stewardWebhooks, aa *allowAll) stewardWebhooks {
	var out stewardWebhooks
	cc := func(orig admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		u := aa.url(webhookPath(orig))
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: aa.ca}
	}
	if steward.validating != nil {
		out.validating = steward.validating.DeepCopy()
		out.validating.Name = allowAllName
		out.validating.Annotations = nil
		for i := range out.validating.Webhooks {
			out.validating.Webhooks[i].ClientConfig = cc(out.validating.Webhooks[i].ClientConfig)
		}
	}
	if steward.mutating != nil {
		out.mutating = steward.mutating.DeepCopy()
		out.mutating.Name = allowAllName
		out.mutating.Annotations = nil
		for i := range out.mutating.Webhooks {
			out.mutating.Webhooks[i].ClientConfig = cc(out.mutating.Webhooks[i].ClientConfig)
		}
	}
	return out
}

// webhookPaths lists the paths of every entry.
func (w stewardWebhooks) paths() []string {
	var out []string
	if w.validating != nil {
		for _, wh := range w.validating.Webhooks {
			out = append(out, webhookPath(wh.ClientConfig))
		}
	}
	if w.mutating != nil {
		for _, wh := range w.mutating.Webhooks {
			out = append(out, webhookPath(wh.ClientConfig))
		}
	}
	return out
}

func webhookPath(cc admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case cc.URL != nil:
		u := *cc.URL
		if i := strings.Index(u, "://"); i >= 0 {
			u = u[i+3:]
		}
		if i := strings.Index(u, "/"); i >= 0 {
			return u[i:]
		}
		return "/"
	case cc.Service != nil && cc.Service.Path != nil:
		return *cc.Service.Path
	}
	return "/"
}

// switchTo removes the current configuration and installs id, returning
// once the API server uses it.
func (s *switcher) switchTo(ctx context.Context, id configID) error {
	if s.current == id {
		return nil
	}
	start := time.Now()
	if err := s.remove(ctx, s.current); err != nil {
		return fmt.Errorf("removing configuration (%s): %w", s.current, err)
	}
	s.current = cfgNone
	if err := s.install(ctx, id); err != nil {
		return fmt.Errorf("installing configuration (%s): %w", id, err)
	}
	s.current = id
	logf("configuration (%s) %s in effect after %s", id, configNames[id], time.Since(start).Round(time.Millisecond))
	return nil
}

func (s *switcher) install(ctx context.Context, id configID) error {
	switch id {
	case cfgNone:
		return nil
	case cfgPolicy:
		ar := s.c.kube.AdmissionregistrationV1()
		if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, s.policy.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, s.binding.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
		return s.waitPolicy(ctx, true)
	case cfgAllowAll:
		return s.installWebhooks(ctx, s.allowAll)
	case cfgSteward:
		return s.installWebhooks(ctx, s.steward)
	}
	return fmt.Errorf("unknown configuration %q", id)
}

func (s *switcher) remove(ctx context.Context, id configID) error {
	switch id {
	case cfgNone:
		return nil
	case cfgPolicy:
		ar := s.c.kube.AdmissionregistrationV1()
		if err := ar.ValidatingAdmissionPolicyBindings().Delete(ctx, policyName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err := ar.ValidatingAdmissionPolicies().Delete(ctx, policyName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return s.waitPolicy(ctx, false)
	case cfgAllowAll:
		return s.removeWebhooks(ctx, allowAllName)
	case cfgSteward:
		return s.removeWebhooks(ctx, s.stewardName())
	}
	return fmt.Errorf("unknown configuration %q", id)
}

func (s *switcher) stewardName() string {
	if s.steward.validating != nil {
		return s.steward.validating.Name
	}
	return s.steward.mutating.Name
}

func (s *switcher) installWebhooks(ctx context.Context, w stewardWebhooks) error {
	ar := s.c.kube.AdmissionregistrationV1()
	if w.validating != nil {
		if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, w.validating.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if w.mutating != nil {
		if _, err := ar.MutatingWebhookConfigurations().Create(ctx, w.mutating.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return s.c.env.WaitWebhooksEffective(ctx, time.Minute)
}

func (s *switcher) removeWebhooks(ctx context.Context, name string) error {
	ar := s.c.kube.AdmissionregistrationV1()
	if err := ar.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := ar.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return s.c.env.WaitWebhooksEffective(ctx, time.Minute)
}

// waitPolicy dry-runs a human change of a Fleet-managed ConfigMap until
// the policy's denial appears (present) or disappears (absent).
func (s *switcher) waitPolicy(ctx context.Context, present bool) error {
	human := s.c.as(humanUser, humanGroups...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		patch := fmt.Appendf(nil, `{"data":{"probe":"%d"}}`, time.Now().UnixNano())
		_, err := human.kube.CoreV1().ConfigMaps(fleetNamespace).Patch(ctx, policyProbeName, types.MergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		denied := err != nil && strings.Contains(err.Error(), policyName)
		if err != nil && !denied && !apierrors.IsForbidden(err) {
			return fmt.Errorf("probing the policy: %w", err)
		}
		if denied == present {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the policy did not take effect (present=%v) within 60s", present)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// names lists the webhook entries.
func (w stewardWebhooks) names() []string {
	var out []string
	if w.validating != nil {
		for _, wh := range w.validating.Webhooks {
			out = append(out, wh.Name)
		}
	}
	if w.mutating != nil {
		for _, wh := range w.mutating.Webhooks {
			out = append(out, wh.Name)
		}
	}
	return out
}
