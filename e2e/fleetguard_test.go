package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// fleetguardConfig ignores /spec/replicas of Deployments, as a Fleet user
// with HorizontalPodAutoscalers would (Fleet's diff.comparePatches).
const fleetguardConfig = harness.DefaultConfig + `rules:
  fleetguard:
    ignoredFields:
    - group: apps
      kind: Deployment
      paths: ["/spec/replicas"]
`

const (
	fleetNS        = "fleet-apps"
	fleetAgentUser = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	fleetguardPath = "/validate/fleetguard"
	fleetScalePath = "/validate/fleetguard/scale"
	fleetguardHook = `admission webhook "fleetguard.steward.dev" denied the request: `
	// fleetguardAccountsHook denies service accounts' writes.
	fleetguardAccountsHook = `admission webhook "fleetguard-serviceaccounts.steward.dev" denied the request: `
	fleetScaleHook         = `admission webhook "fleetguard-scale.steward.dev" denied the request: `
	fleetOwner             = "(bundle deployment web-app, Helm release fleet-apps/web-app)"
	fleetBreakGlass        = " Change it in the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."
)

// fleetMeta is the metadata Fleet's agent puts on what it deploys for
// bundle deployment web-app, Helm release fleet-apps/web-app.
func fleetMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: fleetNS,
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": "Helm",
			"objectset.rio.cattle.io/hash": "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a",
		},
		Annotations: map[string]string{
			"meta.helm.sh/release-name":      "web-app",
			"meta.helm.sh/release-namespace": fleetNS,
			"objectset.rio.cattle.io/id":     "default-web-app",
		},
	}
}

// webDeployment is a Deployment named name with meta's namespace, labels
// and annotations, running replicas pods of one container.
func webDeployment(name string, meta metav1.ObjectMeta, replicas int32) *appsv1.Deployment {
	meta.Name = name
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "web", Image: "ghcr.io/example/web:1.4.2"},
				}},
			},
		},
	}
}

// editDeployment reads a Deployment, changes it with edit and writes it
// back as c, again while the write loses a race with the deployment
// controller's status writes, as kubectl edit would: a test's write
// then gets the answer it is about, not a conflict.
func editDeployment(ctx context.Context, c client.Client, key client.ObjectKey, edit func(*appsv1.Deployment), opts ...client.UpdateOption) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			return err
		}
		edit(d)
		return c.Update(ctx, d, opts...)
	})
}

// setImage is the edit kubectl set image makes to the first container.
func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// unchangedCalls runs f and fails if it made the API server call path.
func unchangedCalls(t *testing.T, path string, f func()) {
	t.Helper()
	before := pathCalls(t, path)
	f()
	if after := pathCalls(t, path); after != before {
		t.Errorf("%s was called %v times; these requests must never reach Steward", path, after-before)
	}
}

// deniedWith fails unless err is fleetguard's denial with exactly msg.
func deniedWith(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the request was allowed; want the denial %q", msg)
	}
	if !strings.Contains(err.Error(), fleetguardHook+msg) {
		t.Fatalf("error:\n%v\nwant it to carry the whole denial:\n%s", err, msg)
	}
}

// TestFleetguard proves fleetguard through the real API server and kubectl:
// the Fleet agent deploys, people are refused with the whole explanation,
// ignored fields, status and break-glass pass, Kubernetes' own controllers
// are never blocked, and unlabelled objects never reach Steward.
func TestFleetguard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	if _, err := env.RestartSteward(ctx, fleetguardConfig); err != nil {
		t.Fatalf("starting steward with the fleetguard configuration: %v", err)
	}
	restoreDefaultSteward(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNS}}); err != nil {
		t.Fatal(err)
	}
	agent, err := env.As(fleetAgentUser)
	if err != nil {
		t.Fatal(err)
	}
	// It writes under its field manager, as Fleet's agent does: its managedFields
	// entry says which fields are Git's.
	agent = client.WithFieldOwner(agent, "fleetagent")
	jane, err := env.As("jane")
	if err != nil {
		t.Fatal(err)
	}
	managedBy := "fleetguard: Deployment fleet-apps/web is managed by Fleet " + fleetOwner + "; manual changes diverge from Git and Fleet reverts them."

	t.Run("AgentCreatesAndUpdatesWithoutCallingSteward", func(t *testing.T) {
		unchangedCalls(t, fleetguardPath, func() {
			d := webDeployment("web", fleetMeta("web"), 3)
			if err := agent.Create(ctx, d); err != nil {
				t.Fatalf("the agent creates a labelled Deployment: %v", err)
			}
			if err := editDeployment(ctx, agent, client.ObjectKeyFromObject(d), setImage("ghcr.io/example/web:1.4.3")); err != nil {
				t.Fatalf("the agent updates it: %v", err)
			}
		})
	})

	t.Run("JaneIsDeniedAnImageChange", func(t *testing.T) {
		want := managedBy + " Changed: /spec/template/spec/containers/0/image." + fleetBreakGlass
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "set", "image", "deployment/web", "web=ghcr.io/example/web:9.9.9")
		deniedWith(t, err, want)

		web := client.ObjectKey{Namespace: fleetNS, Name: "web"}
		deniedWith(t, editDeployment(ctx, jane, web, setImage("ghcr.io/example/web:9.9.9")), want)
		deniedWith(t, editDeployment(ctx, jane, web, setImage("ghcr.io/example/web:9.9.9"), client.DryRunAll), want)
	})

	t.Run("JaneIsDeniedADelete", func(t *testing.T) {
		want := managedBy + " Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead; in an emergency repeat the request as a member of steward:break-glass."
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "delete", "deployment", "web", "--dry-run=server")
		deniedWith(t, err, want)
		_, _, err = env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "delete", "deployment", "web")
		deniedWith(t, err, want)
	})

	t.Run("JaneIsDeniedStrippingFleetsLabel", func(t *testing.T) {
		_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "label", "deployment", "web", "objectset.rio.cattle.io/hash-")
		deniedWith(t, err, managedBy+" Removing Fleet's ownership label objectset.rio.cattle.io/hash is refused: it would hide the object from Fleet while it still runs as deployed from Git."+fleetBreakGlass)
	})

	t.Run("JaneIsDeniedCreatingWithFleetsKeys", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: fleetMeta("settings")}
		deniedWith(t, jane.Create(ctx, cm), "fleetguard: ConfigMap fleet-apps/settings carries Fleet's ownership label objectset.rio.cattle.io/hash and annotation objectset.rio.cattle.io/id "+fleetOwner+
			", which only the Fleet agent sets; a hand-made object with them passes for Git-managed, and Fleet may prune or overwrite it. Remove Fleet's keys, or add the object to the Git repository instead; in an emergency repeat the request as a member of steward:break-glass.")
	})

	t.Run("AnIgnoredPathMayChange", func(t *testing.T) {
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "patch", "deployment", "web", "--type=merge", "-p", `{"spec":{"replicas":4}}`); err != nil {
			t.Fatalf("patching the ignored /spec/replicas: %v", err)
		}
		before := pathCalls(t, fleetScalePath)
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "scale", "deployment", "web", "--replicas=5"); err != nil {
			t.Fatalf("scaling through the scale subresource follows ignoredFields: %v", err)
		}
		// At least once: the API server calls admission again when it
		// retries a write that lost a race with the deployment controller.
		if after := pathCalls(t, fleetScalePath); after < before+1 {
			t.Errorf("the scale request reached Steward %v times, want at least once", after-before)
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fleetNS, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 5 {
			t.Errorf("replicas = %d, want 5", *d.Spec.Replicas)
		}
	})

	t.Run("ScalingAFleetStatefulSetIsDenied", func(t *testing.T) {
		// Only Deployments' replicas are ignored; a StatefulSet's are not:
		// a person's scale is refused, the HorizontalPodAutoscaler's, which
		// never reaches Steward, is not.
		meta := fleetMeta("db")
		ss := &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}},
			},
		}}
		if err := agent.Create(ctx, ss); err != nil {
			t.Fatal(err)
		}
		want := "fleetguard: StatefulSet fleet-apps/db is managed by Fleet " + fleetOwner + "; manual changes diverge from Git and Fleet reverts them. Changed: /spec/replicas." + fleetBreakGlass
		// The metadata cache sees the new StatefulSet a moment later.
		harness.Eventually(t, 10*time.Second, func() error {
			_, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "scale", "statefulset", "db", "--replicas=3")
			if err == nil || !strings.Contains(err.Error(), fleetScaleHook+want) {
				return fmt.Errorf("want the denial %q, got %v", want, err)
			}
			return nil
		})
		unchangedCalls(t, fleetguardPath+"/scale", func() {
			if _, _, err := env.Kubectl(ctx, "", "--as", "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "-n", fleetNS, "scale", "statefulset", "db", "--replicas=3"); err != nil {
				t.Errorf("the autoscaler scales: %v", err)
			}
		})
		if _, _, err := env.Kubectl(ctx, "", "--as", fleetAgentUser, "-n", fleetNS, "scale", "statefulset", "db", "--replicas=2"); err != nil {
			t.Errorf("the agent scales: %v", err)
		}
	})

	t.Run("AStatusOnlyUpdateIsAllowed", func(t *testing.T) {
		unchangedCalls(t, fleetguardPath, func() {
			if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"observedGeneration":7}}`); err != nil {
				t.Fatalf("patching status: %v", err)
			}
		})
		// Bookkeeping on the object itself reaches Steward and is allowed.
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "patch", "deployment", "web", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`); err != nil {
			t.Fatalf("adding a finalizer: %v", err)
		}
		if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "patch", "deployment", "web", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`); err != nil {
			t.Fatalf("removing a finalizer: %v", err)
		}
	})

	t.Run("BreakGlassIsAllowedAndAudited", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "jane", "--as-group", "steward:break-glass", "-n", fleetNS, "set", "image", "deployment/web", "web=ghcr.io/example/web:9.9.9")
		if err != nil {
			t.Fatalf("break-glass: %v", err)
		}
		wantWarning := "fleetguard: break-glass by jane (group steward:break-glass) recorded; without it: " + managedBy + " Changed: /spec/template/spec/containers/0/image." + fleetBreakGlass
		if !strings.Contains(stderr, "Warning: "+wantWarning) {
			t.Errorf("kubectl's warnings:\n%s\nwant:\n%s", stderr, wantWarning)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
				return ev.Stage == "ResponseComplete" && ev.Annotations["fleetguard.steward.dev/break-glass-by"] == "jane"
			})
			if err != nil {
				return err
			}
			if len(events) == 0 {
				return fmt.Errorf("no audit event carries fleetguard.steward.dev/break-glass-by=jane")
			}
			if got := events[0].Annotations["fleetguard.steward.dev/decision"]; got != "bypassed" {
				return fmt.Errorf("audit decision %q, want bypassed", got)
			}
			return nil
		})
	})

	t.Run("UnlabelledObjectsNeverReachSteward", func(t *testing.T) {
		unchangedCalls(t, fleetguardPath, func() {
			d := webDeployment("plain", metav1.ObjectMeta{Namespace: fleetNS}, 3)
			if err := jane.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
			if err := editDeployment(ctx, jane, client.ObjectKeyFromObject(d), setImage("ghcr.io/example/web:2")); err != nil {
				t.Fatal(err)
			}
			if err := jane.Delete(ctx, d); err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: fleetNS}, Data: map[string]string{"a": "1"}}
			if err := jane.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			if err := jane.Delete(ctx, cm); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("ObjectsAppliedWithAnOwnerNeverReachSteward", func(t *testing.T) {
		// Rancher and Fleet's controller apply their own objects with an
		// owner annotation; those are not bundle content.
		meta := metav1.ObjectMeta{Name: "rancher-owned", Namespace: fleetNS,
			Labels:      map[string]string{"objectset.rio.cattle.io/hash": "abc"},
			Annotations: map[string]string{"objectset.rio.cattle.io/owner-gvk": "v1, Kind=Namespace", "objectset.rio.cattle.io/id": "fleet-manage-agent"}}
		rancher, err := env.As("system:serviceaccount:cattle-system:rancher")
		if err != nil {
			t.Fatal(err)
		}
		unchangedCalls(t, fleetguardPath, func() {
			cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": "1"}}
			if err := rancher.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			cm.Data["a"] = "2"
			if err := rancher.Update(ctx, cm); err != nil {
				t.Fatal(err)
			}
			if err := rancher.Delete(ctx, cm); err != nil {
				t.Fatal(err)
			}
		})
		// Adding the owner annotation to a bundle's object does reach
		// Steward, and is refused.
		_, _, err = env.Kubectl(ctx, "", "--as", "jane", "-n", fleetNS, "annotate", "deployment", "web", "objectset.rio.cattle.io/owner-gvk=v1, Kind=Namespace")
		deniedWith(t, err, managedBy+" Changed: /metadata/annotations/objectset.rio.cattle.io~1owner-gvk."+fleetBreakGlass)
	})

	t.Run("ANamespaceHoldingManagedObjectsCanBeDeleted", func(t *testing.T) {
		const doomed = "fleet-doomed"
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}); err != nil {
			t.Fatal(err)
		}
		cm := func(name string) *corev1.ConfigMap {
			m := fleetMeta(name)
			m.Namespace = doomed
			return &corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{"a": "1"}}
		}
		for _, name := range []string{"by-namespace-controller", "by-garbage-collector"} {
			if err := agent.Create(ctx, cm(name)); err != nil {
				t.Fatal(err)
			}
		}
		d := webDeployment("web", fleetMeta("web"), 3)
		d.Namespace = doomed
		if err := agent.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		// kube-controller-manager does not run here: delete as its
		// controllers do. Neither they nor the namespace deletion itself
		// call Steward, so even an unreachable Steward cannot block them.
		unchangedCalls(t, fleetguardPath, func() {
			nsController, err := env.As("system:serviceaccount:kube-system:namespace-controller")
			if err != nil {
				t.Fatal(err)
			}
			gc, err := env.As("system:serviceaccount:kube-system:generic-garbage-collector")
			if err != nil {
				t.Fatal(err)
			}
			if err := nsController.Delete(ctx, cm("by-namespace-controller")); err != nil {
				t.Errorf("the namespace controller deletes a managed object: %v", err)
			}
			if err := nsController.Delete(ctx, d); err != nil {
				t.Errorf("the namespace controller deletes a managed Deployment: %v", err)
			}
			if err := gc.Delete(ctx, cm("by-garbage-collector")); err != nil {
				t.Errorf("the garbage collector deletes a managed object: %v", err)
			}
			if _, _, err := env.Kubectl(ctx, "", "--as", "jane", "delete", "namespace", doomed, "--wait=false"); err != nil {
				t.Errorf("jane deletes the namespace: %v", err)
			}
		})
	})

	// Leave nothing Fleet-managed behind: only the agent may delete it.
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: fleetNS}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: fleetNS}},
	} {
		if err := agent.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			t.Errorf("cleaning up %s: %v", o.GetName(), err)
		}
	}
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNS}}); err != nil {
		t.Errorf("cleaning up namespace %s: %v", fleetNS, err)
	}
}

// TestFleetguardWatchesOnlyFleetManagedWorkloads proves, with the API
// server's own count of watch events sent, that fleetguard's workload cache
// is selected by Fleet's hash label: writes to a ReplicaSet without it
// send Steward nothing, the same writes to a labelled one do. The count
// is of every watcher, so the test runs its own API server and Steward,
// without the shared environment's kube-controller-manager, whose
// garbage collector and replicaset controller watch every ReplicaSet.
func TestFleetguardWatchesOnlyFleetManagedWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	own, err := harness.StartWith(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Stop()
	if _, err := own.StartSteward(ctx, harness.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	const ns = "fleet-cache"
	if err := own.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sent := func() float64 {
		t.Helper()
		families, err := own.APIServerMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return harness.SumFamilies(families, "apiserver_watch_events_total", map[string]string{"group": "apps", "resource": "replicasets"})
	}
	// The Fleet agent writes both, as only it may write labelled objects.
	agent, err := own.As(fleetAgentUser, "system:serviceaccounts", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	// It writes under its field manager, as Fleet's agent does: its managedFields
	// entry says which fields are Git's.
	agent = client.WithFieldOwner(agent, "fleetagent")
	write := func(rs *appsv1.ReplicaSet) {
		t.Helper()
		if err := agent.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			before := rs.DeepCopy()
			rs.Annotations = map[string]string{"example.com/revision": fmt.Sprint(i)}
			if err := agent.Patch(ctx, rs, client.MergeFrom(before)); err != nil {
				t.Fatal(err)
			}
		}
	}

	before := sent()
	write(webReplicaSet(ns, "plain", nil))
	time.Sleep(2 * time.Second) // what a watch would have been sent by now
	// The API server also sends each watch a bookmark about once a minute,
	// which the counter cannot tell from an event: at most one may land in
	// the window. Without the selector the writes alone would send six.
	if got := sent() - before; got > 1 {
		t.Errorf("6 writes to a ReplicaSet without %s sent %v watch events; want none (one bookmark at most)", "objectset.rio.cattle.io/hash", got)
	}

	before = sent()
	write(webReplicaSet(ns, "managed", map[string]string{"objectset.rio.cattle.io/hash": "3e4c9a2f"}))
	deadline := time.Now().Add(20 * time.Second)
	for sent()-before < 6 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := sent() - before; got < 6 {
		t.Errorf("6 writes to a Fleet-managed ReplicaSet sent %v watch events; want at least 6, one per write to Steward's cache", got)
	}
}

// webReplicaSet is a ReplicaSet of one container with the given labels.
func webReplicaSet(ns, name string, labels map[string]string) *appsv1.ReplicaSet {
	pod := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/example/web:1.4.2"}}},
			},
		},
	}
}
