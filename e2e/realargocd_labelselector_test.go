package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// The label-selected test's Application and namespace, and the label
// Argo CD's annotation+label tracking writes.
const (
	lblName       = "realargocd-lbl"
	lblNS         = "realargocd-lbl"
	instanceLabel = "app.kubernetes.io/instance"
)

// argocdObjectEntries are argocdguard's two entries for every object, the
// ones whose matchConditions the API server evaluates on every write.
var argocdObjectEntries = []string{"argocdguard.steward.dev", "argocdguard-serviceaccounts.steward.dev"}

// TestRealArgoCDAnnotationLabelTracking installs Steward's webhooks as the
// chart renders them with docs/examples/argocd-annotation-label-values.yaml,
// which narrows argocdguard's two object entries to objects carrying Argo
// CD's instance label, and runs the real Argo CD with
// application.resourceTrackingMethod: annotation+label. What Argo CD syncs
// carries both markers and stays guarded (a person's edit, the label's
// and the tracking id's removal, a delete and a DeleteCollection are
// refused; through /status the label stays), none of Argo CD's
// writes is refused, and a person's writes to an object without the label
// never reach the entries' matchConditions: the API server's own count of
// the conditions' exclusions does not move, where under the default
// registration it counts every one of the same writes.
func TestRealArgoCDAnnotationLabelTracking(t *testing.T) {
	if os.Getenv("ARGOCD") == "" {
		t.Skip("ARGOCD is not set: run through make, which builds Argo CD")
	}
	helm := helmBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	keepStewardRunning(t)
	restoreDefaultSteward(t)
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The release is named as the harness names the configurations, so
	// these replace the default registration rather than join it.
	rendered := helmTemplate(ctx, t, helm, harness.WebhookConfigurationName, "--namespace", harness.StewardNamespace,
		"--set", "certificates.mode=self-managed",
		"--values", filepath.Join(root, "docs", "examples", "argocd-annotation-label-values.yaml"))
	webhooks, err := harness.ParseWebhooks("helm template", rendered)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, Webhooks: &webhooks}); err != nil {
		t.Fatal(err)
	}

	t.Run("TheEntriesRequireTheLabel", func(t *testing.T) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
			t.Fatal(err)
		}
		for _, wh := range vwc.Webhooks {
			if !slices.Contains(argocdObjectEntries, wh.Name) {
				continue
			}
			want := metav1.LabelSelectorRequirement{Key: instanceLabel, Operator: metav1.LabelSelectorOpExists}
			if wh.ObjectSelector == nil || !slices.ContainsFunc(wh.ObjectSelector.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
				return r.Key == want.Key && r.Operator == want.Operator
			}) {
				t.Errorf("the registered entry %s has objectSelector %v, want one requiring %s", wh.Name, wh.ObjectSelector, instanceLabel)
			}
		}
	})

	startRealArgoCD(ctx, t, argoApp{name: lblName, ns: lblNS,
		files: map[string]string{
			"deploy/web.yaml":      realArgoDeployment("ghcr.io/example/web:1", lblNS),
			"deploy/settings.yaml": realArgoConfigMap("blue", lblNS),
		},
		settings: map[string]string{"application.resourceTrackingMethod": "annotation+label"},
	})

	t.Run("WhatArgoCDSyncsCarriesBothMarkers", func(t *testing.T) {
		for name, obj := range map[string]client.Object{"web": &appsv1.Deployment{}, "settings": &corev1.ConfigMap{}} {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: lblNS, Name: name}, obj); err != nil {
				t.Fatal(err)
			}
			if got := obj.GetLabels()[instanceLabel]; got != lblName {
				t.Errorf("%T %s: label %s is %q, want the Application's name %s", obj, name, instanceLabel, got, lblName)
			}
			if got := obj.GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(got, lblName+":") {
				t.Errorf("%T %s: tracking id %q, want one naming Application %s", obj, name, got, lblName)
			}
		}
	})

	t.Run("APersonsEditIsRefused", func(t *testing.T) {
		wantEditRefused(ctx, t, lblNS, argocdguardHook+"argocdguard: ConfigMap "+lblNS+"/settings is managed by Argo CD Application "+harness.ArgoCDNamespace+"/"+lblName, "/data/color")
	})

	for name, args := range map[string][]string{
		"RemovingTheLabelIsRefused":      {"label", "configmap", "settings", instanceLabel + "-"},
		"RemovingTheTrackingIdIsRefused": {"annotate", "configmap", "settings", "argocd.argoproj.io/tracking-id-"},
		"ADeleteIsRefused":               {"delete", "configmap", "settings"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := env.Kubectl(ctx, "", append([]string{"--as", "alice", "-n", lblNS, "--dry-run=server"}, args...)...)
			if err == nil || !strings.Contains(stderr, argocdguardHook) {
				t.Errorf("kubectl %v as a person: %v %s; want argocdguard's denial", args, err, stderr)
			}
		})
	}

	// A Deployment's status strategy keeps its labels, so the patch stores
	// nothing; where a kind's would not, the old object still selects the
	// write (a Service's, in TestArgocdguard's table).
	t.Run("RemovingTheLabelThroughStatusLeavesIt", func(t *testing.T) {
		_, stderr, err := env.Kubectl(ctx, "", "--as", "alice", "-n", lblNS, "patch", "deployment", "web", "--subresource=status", "--type=merge",
			"-p", `{"metadata":{"labels":{"`+instanceLabel+`":null}}}`)
		if err != nil && !strings.Contains(stderr, argocdguardHook) {
			t.Fatalf("the /status patch failed otherwise than by argocdguard's denial: %v %s", err, stderr)
		}
		web := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: lblNS, Name: "web"}, web); err != nil {
			t.Fatal(err)
		}
		if got := web.Labels[instanceLabel]; got != lblName {
			t.Errorf("after a person's /status patch the Deployment's %s is %q, want %s: it would no longer be selected", instanceLabel, got, lblName)
		}
	})

	t.Run("DeleteCollectionIsRefused", func(t *testing.T) {
		alice, err := env.As("alice", "system:authenticated")
		if err != nil {
			t.Fatal(err)
		}
		err = alice.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(lblNS), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "argocdguard") {
			t.Errorf("a person's DeleteCollection of the namespace's ConfigMaps: %v; want argocdguard's denial", err)
		}
	})

	t.Run("NoWriteOfArgoCDIsRefused", func(t *testing.T) {
		wantArgoCDWrites(t, lblNS, "create configmaps/settings")
	})

	t.Run("WritesToObjectsWithoutTheLabelAreNotEvaluated", func(t *testing.T) {
		if n := personsWritesEvaluated(ctx, t, "unmarked", nil); n != 0 {
			t.Errorf("argocdguard's matchConditions excluded %v of a person's writes to a ConfigMap without %s; want 0: the objectSelector passes them first", n, instanceLabel)
		}
		// The selector narrows, it does not switch the entries off.
		if n := personsWritesEvaluated(ctx, t, "labelled", map[string]string{instanceLabel: "not-argo"}); n < 3 {
			t.Errorf("argocdguard's matchConditions excluded %v of a person's three writes to a ConfigMap carrying %s; want each evaluated", n, instanceLabel)
		}
	})

	t.Run("UnderTheDefaultRegistrationTheSameWritesAreEvaluated", func(t *testing.T) {
		if _, err := env.RestartSteward(ctx, harness.DefaultConfig); err != nil {
			t.Fatal(err)
		}
		if n := personsWritesEvaluated(ctx, t, "unmarked-default", nil); n < 3 {
			t.Errorf("under the default registration argocdguard's matchConditions excluded %v of a person's three writes to a ConfigMap without %s; want each evaluated", n, instanceLabel)
		}
	})
}

// personsWritesEvaluated has a person create, update and delete a
// ConfigMap named name in lblNS carrying labels, and returns how many
// requests argocdguard's object entries' matchConditions excluded
// meanwhile, by the API server's own count.
func personsWritesEvaluated(ctx context.Context, t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	alice, err := env.As("alice", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	excluded := func() float64 {
		var n float64
		for _, e := range argocdObjectEntries {
			n += celExclusions(ctx, t, e)
		}
		return n
	}
	before := excluded()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lblNS, Labels: labels}, Data: map[string]string{"color": "blue"}}
	if err := alice.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["color"] = "red"
	if err := alice.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := alice.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return excluded() - before
}
