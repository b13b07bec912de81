package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// timeoutMargin is what the API server may add to a webhook's timeout
// before it answers: connection handling and its own processing. It is
// far below the 10 s default timeout this test exists to rule out.
const timeoutMargin = 1500 * time.Millisecond

// unaffectedBound is less than the timeout of every webhook that could
// match the unaffected writes (ConfigMaps and Leases reach only webhooks of
// 2 s or more): a write that took longer might have waited for Steward.
const unaffectedBound = 1900 * time.Millisecond

// TestStewardDownLeavesTheClusterWorking proves what a Steward outage costs,
// for two kinds of outage: the process is gone (connections refused) and
// the process hangs (SIGSTOP: connections accepted, never answered, the
// case that makes a webhook's timeout matter).
//
//   - Writes in Steward's own namespace and kube-system, to Leases, and to
//     unlabelled objects succeed, and never wait for Steward, even when they
//     carry Fleet's label.
//   - Each registered webhook's guarded write behaves as its failure
//     policy says: Fail refuses with the API server's "failed calling
//     webhook" error naming the webhook, Ignore lets it through; both
//     within the webhook's timeout plus a margin, never the 10 s default.
//   - When Steward comes back, the guarded writes get its answers again.
func TestStewardDownLeavesTheClusterWorking(t *testing.T) {
	for _, outage := range []string{"stopped", "hung"} {
		t.Run(outage, func(t *testing.T) {
			keepStewardRunning(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			ns := testNamespace(t, ctx, "outage-"+outage)
			writes := setupGuardedWrites(t, ctx, ns)
			hooks := exercisedWebhooks(t, ctx, writes)

			bringBack := takeDown(t, ctx, outage)

			t.Run("UnguardedWritesAreUnaffected", func(t *testing.T) {
				checkUnaffectedWrites(t, ctx, ns, outage == "hung")
			})
			t.Run("GuardedWritesFollowTheFailurePolicy", func(t *testing.T) {
				checkFailurePolicies(t, ctx, hooks, writes, outage == "hung")
			})

			// Bring Steward back: it answers again.
			bringBack()
			harness.Eventually(t, 30*time.Second, func() error {
				err := writes["fleetguard.steward.dev"](ctx)
				if err == nil || !strings.Contains(err.Error(), "fleetguard:") {
					return fmt.Errorf("after steward came back, a hand edit of a Fleet-managed object got %v, want fleetguard's denial", err)
				}
				return nil
			})
		})
	}
}

// exercisedWebhooks returns every registered webhook that has rules, after
// proving with Steward's request counter that its guarded write reaches it
// while Steward is up, and that Steward answers it. A registered webhook
// with no guarded write fails the test: each webhook's outage behaviour
// must be proven.
func exercisedWebhooks(t *testing.T, ctx context.Context, writes map[string]guardedWrite) []registeredWebhook {
	t.Helper()
	var hooks []registeredWebhook
	for _, w := range registeredWebhooks(t, ctx) {
		if w.rules == 0 {
			// Rules filled in at run time (claimguard) may be empty
			// before their kinds exist: nothing reaches such a webhook.
			t.Logf("webhook %s has no rules yet; nothing can reach it", w.name)
			continue
		}
		write, ok := writes[w.name]
		if !ok {
			t.Errorf("webhook %s has no guarded write in setupGuardedWrites: add one so its outage behaviour is tested", w.name)
			continue
		}
		before := webhookCalls(t, env.Steward, w.path)
		if err := write(ctx); err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("webhook %s: with Steward up, the guarded write failed to reach it: %v", w.name, err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			if after := webhookCalls(t, env.Steward, w.path); after <= before {
				return fmt.Errorf("webhook %s: the guarded write did not reach Steward at %s", w.name, w.path)
			}
			return nil
		})
		hooks = append(hooks, w)
	}
	if len(hooks) == 0 {
		t.Fatal("no registered webhook could be exercised")
	}
	return hooks
}

// checkUnaffectedWrites creates, updates and deletes objects that carry
// Fleet's label (so only the namespace or the resource keeps them from
// Steward) in the excluded namespaces, a Lease, and an unlabelled object.
func checkUnaffectedWrites(t *testing.T, ctx context.Context, ns string, hung bool) {
	jane := userClient(t, "jane", []string{"devs"}, nil)
	cases := map[string]client.Object{
		"LabelledConfigMapInStewardNamespace": &corev1.ConfigMap{ObjectMeta: fleetManaged(harness.StewardNamespace, uniqueName("outage"))},
		"LabelledConfigMapInKubeSystem":       &corev1.ConfigMap{ObjectMeta: fleetManaged(metav1.NamespaceSystem, uniqueName("outage"))},
		"LabelledLease":                       &coordinationv1.Lease{ObjectMeta: fleetManaged(ns, uniqueName("outage")), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1")}},
		"UnlabelledConfigMap":                 &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: uniqueName("plain")}},
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			ops := []struct {
				op string
				do func() error
			}{
				{"create", func() error { return jane.Create(ctx, obj) }},
				{"update", func() error {
					patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"edited":"by-hand"}}}`))
					return jane.Patch(ctx, obj, patch)
				}},
				{"delete", func() error { return jane.Delete(ctx, obj) }},
			}
			for _, op := range ops {
				start := time.Now()
				err := op.do()
				elapsed := time.Since(start)
				if err != nil {
					t.Errorf("%s while Steward is down: %v", op.op, err)
					return
				}
				if hung && elapsed > unaffectedBound {
					t.Errorf("%s took %s while Steward hangs: it looks like it waited for Steward", op.op, elapsed)
				}
			}
		})
	}
}

// checkFailurePolicies runs every webhook's guarded write at once and
// checks each against the webhook's registered failure policy and timeout.
func checkFailurePolicies(t *testing.T, ctx context.Context, hooks []registeredWebhook, writes map[string]guardedWrite, hung bool) {
	type result struct {
		err     error
		elapsed time.Duration
	}
	results := make([]result, len(hooks))
	var wg sync.WaitGroup
	for i, w := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := writes[w.name](ctx)
			results[i] = result{err, time.Since(start)}
		}()
	}
	wg.Wait()
	for i, w := range hooks {
		r := results[i]
		t.Run(w.name, func(t *testing.T) {
			t.Logf("failurePolicy %s, timeout %s: answered in %s (err: %v)", w.failurePolicy, w.timeout, r.elapsed.Round(time.Millisecond), r.err)
			switch w.failurePolicy {
			case admissionregistrationv1.Fail:
				if r.err == nil || !strings.Contains(r.err.Error(), "failed calling webhook") || !strings.Contains(r.err.Error(), w.name) {
					t.Errorf("failurePolicy Fail: want the API server's \"failed calling webhook %q\" error, got %v", w.name, r.err)
				}
			case admissionregistrationv1.Ignore:
				if r.err != nil {
					t.Errorf("failurePolicy Ignore: want the write allowed, got %v", r.err)
				}
			}
			if r.elapsed > w.timeout+timeoutMargin {
				t.Errorf("took %s, want at most the webhook's timeout %s + %s", r.elapsed, w.timeout, timeoutMargin)
			}
			if hung && r.elapsed < w.timeout*9/10 {
				t.Errorf("took %s while Steward hangs, less than the timeout %s: the write did not wait for Steward, so this case tests nothing", r.elapsed, w.timeout)
			}
		})
	}
}

// TestStewardCannotBlockItsOwnRecovery proves that a hung Steward, with a
// failurePolicy Fail webhook that matches every Fleet-labelled object, can
// block neither changes to its own Deployment, Service and Secret (its
// namespace is excluded by every webhook's namespaceSelector) nor changes
// to its webhook configurations (the API server never sends those to
// admission webhooks), even when all of them carry Fleet's label, as they
// would if Fleet installed Steward. It then runs the recovery runbook's
// command (docs/reliability.md) and proves the guarded writes go through afterwards.
func TestStewardCannotBlockItsOwnRecovery(t *testing.T) {
	keepStewardRunning(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		// The runbook deleted the webhook configurations: register them
		// again with a fresh Steward.
		_ = env.Steward.Signal(syscall.SIGCONT)
		if _, err := env.RestartSteward(context.Background(), harness.DefaultConfig); err != nil {
			t.Errorf("re-registering steward after the runbook: %v", err)
		}
	})
	ns := testNamespace(t, ctx, "self-protection")
	writes := setupGuardedWrites(t, ctx, ns)
	guarded := writes["fleetguard.steward.dev"]

	// Steward's own objects, labelled as Fleet labels what it deploys.
	own := []client.Object{
		&appsv1.Deployment{
			ObjectMeta: fleetManaged(harness.StewardNamespace, "steward"),
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "steward"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "steward"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "steward", Image: "ghcr.io/stewardhq/steward:v0.1.0"}}},
				},
			},
		},
		&corev1.Service{ObjectMeta: fleetManaged(harness.StewardNamespace, "steward"), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}},
		&corev1.Secret{ObjectMeta: fleetManaged(harness.StewardNamespace, "steward-serving-cert")},
	}
	for _, obj := range own {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		// Deleted below; this covers a test that stops half-way, so the
		// names stay free for other tests.
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	configs := []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: harness.WebhookConfigurationName}},
	}
	labelFleet := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+fleetHashLabel+`":"0123456789abcdef"}}}`))
	for _, obj := range configs {
		if err := env.Client.Patch(ctx, obj, labelFleet); err != nil {
			t.Fatalf("labelling %T: %v", obj, err)
		}
	}

	if err := env.Steward.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := guarded(ctx); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("with Steward hung, a guarded write got %v; want the failurePolicy Fail refusal this test must recover from", err)
	}

	jane := userClient(t, "jane", []string{"devs"}, nil)
	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		if err := f(); err != nil {
			t.Errorf("%s while Steward hangs: %v", what, err)
		} else if elapsed := time.Since(start); elapsed > unaffectedBound {
			t.Errorf("%s took %s while Steward hangs: it waited for Steward", what, elapsed)
		}
	}
	edit := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"recovery":"edited"}}}`))
	for _, obj := range append(configs, own...) {
		kind := fmt.Sprintf("%T %s", obj, obj.GetName())
		timed("updating "+kind, func() error { return jane.Patch(ctx, obj, edit) })
	}
	for _, obj := range own {
		kind := fmt.Sprintf("%T %s", obj, obj.GetName())
		timed("deleting "+kind, func() error { return jane.Delete(ctx, obj) })
	}

	// The runbook: delete both webhook configurations.
	timed("the runbook's kubectl delete", func() error {
		_, _, err := env.Kubectl(ctx, "", strings.Fields(recoveryRunbook)[1:]...)
		return err
	})
	harness.Eventually(t, 30*time.Second, func() error {
		if err := guarded(ctx); err != nil {
			return fmt.Errorf("after the runbook, the guarded write still fails: %w", err)
		}
		return nil
	})
}

// recoveryRunbook is the command the recovery runbook (docs/reliability.md)
// gives.
const recoveryRunbook = "kubectl delete validatingwebhookconfiguration/steward mutatingwebhookconfiguration/steward"
