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
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	for _, c := range []struct {
		kind          string
		obj           client.Object
		clientConfigs func() []*admissionregistrationv1.WebhookClientConfig
	}{
		{"validating", vwc, func() (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range vwc.Webhooks {
				out = append(out, &vwc.Webhooks[i].ClientConfig)
			}
			return out
		}},
		{"mutating", mwc, func() (out []*admissionregistrationv1.WebhookClientConfig) {
			for i := range mwc.Webhooks {
				out = append(out, &mwc.Webhooks[i].ClientConfig)
			}
			return out
		}},
	} {
		err := harness.Poll(ctx, 10*time.Second, func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, c.obj); err != nil {
				return err
			}
			for _, cc := range c.clientConfigs() {
				change(cc)
			}
			return env.Client.Update(ctx, c.obj)
		})
		if err != nil {
			t.Fatalf("changing the %s webhooks' clientConfig: %v", c.kind, err)
		}
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
