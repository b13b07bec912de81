package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// rewriteClientConfigs changes the clientConfig of every webhook of both
// of Steward's configurations, e.g. to write a caBundle as cert-manager's
// CA injector does, and returns once the API server's admission plugins
// use the change. Each configuration is read and written again until the
// write succeeds or ten seconds pass: Steward's own CA injection (in
// self-managed mode) writes the same objects and may win a race.
func rewriteClientConfigs(t *testing.T, ctx context.Context, change func(*admissionregistrationv1.WebhookClientConfig)) {
	t.Helper()
	err := harness.Poll(ctx, 10*time.Second, func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
			return err
		}
		for i := range vwc.Webhooks {
			change(&vwc.Webhooks[i].ClientConfig)
		}
		return env.Client.Update(ctx, vwc)
	})
	if err != nil {
		t.Fatalf("changing the validating webhooks' clientConfig: %v", err)
	}
	err = harness.Poll(ctx, 10*time.Second, func() error {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, mwc); err != nil {
			return err
		}
		for i := range mwc.Webhooks {
			change(&mwc.Webhooks[i].ClientConfig)
		}
		return env.Client.Update(ctx, mwc)
	})
	if err != nil {
		t.Fatalf("changing the mutating webhooks' clientConfig: %v", err)
	}
	if err := env.WaitWebhooksEffective(ctx, harness.PropagationTimeout); err != nil {
		t.Fatal(err)
	}
}

// repointWebhooks sends every webhook of Steward's configurations to port
// to instead of from. Restarting the harness Steward re-registers them.
func repointWebhooks(t *testing.T, ctx context.Context, from, to int) {
	t.Helper()
	rewriteClientConfigs(t, ctx, func(cc *admissionregistrationv1.WebhookClientConfig) {
		if cc.URL != nil {
			u := strings.Replace(*cc.URL, ":"+strconv.Itoa(from)+"/", ":"+strconv.Itoa(to)+"/", 1)
			cc.URL = &u
		}
	})
}
