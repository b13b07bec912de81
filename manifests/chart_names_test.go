package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// allValuesFile sets every value the chart has for adapting an install.
var allValuesFile = filepath.Join("testdata", "chart-values-all.yaml")

// unnamed unsets the names allValuesFile sets, for tests of releases'
// own names.
var unnamed = []string{"--set", "nameOverride=,fullnameOverride="}

// TestChartAcceptsEveryValue lints the chart strictly and renders it with
// every value it has set.
func TestChartAcceptsEveryValue(t *testing.T) {
	for _, mode := range []string{"cert-manager", "self-managed"} {
		args := append([]string{"lint", "--strict", chartPath, "--values", allValuesFile, "--set", "certificates.mode=" + mode}, allOptionalObjects...)
		if out, err := exec.Command(helm(t), args...).CombinedOutput(); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		helmTemplate(t, DefaultNamespace, append([]string{"--values", allValuesFile, "--set", "certificates.mode=" + mode}, allOptionalObjects...)...)
	}
}

// allOptionalObjects turns on every object the chart leaves out by
// default but the PolicyReport CRDs, which are the cluster's and not a
// release's (see TestTwoReleasesDoNotClash).
var allOptionalObjects = []string{"--set", "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true"}

// configNaming is the default configuration with claimguard's
// webhookConfigurationName set to name, as the chart writes it for a
// release whose full name is name.
func configNaming(t *testing.T, name string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\nrules:\n  claimguard:\n    webhookConfigurationName: "+name+"\n"), "test", webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// TestChartNamesObjectsAfterTheRelease installs releases not named
// steward and proves each is what `steward manifests` renders for an
// install of that name: every object, RBAC subject and role reference,
// the serving certificate's names and Secret, cert-manager's CA
// injection, the self-managed mode's flags, claimguard's webhook
// configuration (in the ConfigMap and in its permission to update it),
// the alerts' job and the selectors, which also match
// app.kubernetes.io/instance. (The releases' names contain the chart's,
// so they are the full names; TestChartNameOverrides covers the others.)
func TestChartNamesObjectsAfterTheRelease(t *testing.T) {
	tests := map[string]struct {
		release, fullname string
	}{
		"a release named prod-steward":   {release: "prod-steward", fullname: "prod-steward"},
		"a release named steward-canary": {release: "steward-canary", fullname: "steward-canary"},
	}
	for name, tc := range tests {
		dir := renderTo(t, Options{Name: tc.fullname, Config: configNaming(t, tc.fullname)})
		for overlay, flags := range map[string][]string{
			"cert-manager":       allOptionalObjects,
			"self-managed-certs": append([]string{"--set", "certificates.mode=self-managed"}, allOptionalObjects...),
		} {
			t.Run(name+", "+overlay, func(t *testing.T) {
				got := helmTemplateRelease(t, tc.release, DefaultNamespace, flags...)
				want := withoutNamespaceObject(t, kustomize(t, filepath.Join(dir, "overlays", overlay)), DefaultNamespace)
				want = append(want, kustomize(t, filepath.Join(dir, "monitoring"))...)
				normalizeConfig(t, got)
				normalizeConfig(t, want)
				sameObjects(t, got, want)
				for _, o := range got {
					if !strings.HasPrefix(o.GetName(), tc.fullname) {
						t.Errorf("%s %s is not named after the release (%s)", o.GetKind(), o.GetName(), tc.fullname)
					}
				}
			})
		}
	}
}

// TestChartNameOverrides: fullnameOverride names the objects outright,
// and nameOverride takes the chart's name's place in the names and the
// app.kubernetes.io/name label.
func TestChartNameOverrides(t *testing.T) {
	tests := map[string]struct {
		release, set, fullname, appName string
	}{
		"a release named prod":               {release: "prod", set: "nameOverride=", fullname: "prod-steward", appName: Name},
		"fullnameOverride":                   {release: "x", set: "fullnameOverride=guard", fullname: "guard", appName: Name},
		"nameOverride":                       {release: "x", set: "nameOverride=warden", fullname: "x-warden", appName: "warden"},
		"nameOverride in the release's name": {release: "warden-a", set: "nameOverride=warden", fullname: "warden-a", appName: "warden"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := helmTemplateRelease(t, tc.release, DefaultNamespace, "--set", tc.set)
			for _, want := range []string{"Deployment/" + tc.fullname, "Service/" + tc.fullname, "ConfigMap/" + tc.fullname + "-config",
				"ValidatingWebhookConfiguration/" + tc.fullname, "MutatingWebhookConfiguration/" + tc.fullname, "ClusterRole/" + tc.fullname,
				"Certificate/" + tc.fullname + "-serving-cert"} {
				kind, n, _ := strings.Cut(want, "/")
				if find(objs, kind, n) == nil {
					t.Errorf("%s renders no %s", tc.set, want)
				}
			}
			d := find(objs, "Deployment", tc.fullname)
			if d == nil {
				t.FailNow()
			}
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
			if sel[nameLabel] != tc.appName || sel[instanceLabel] != tc.release {
				t.Errorf("the Deployment selects %v, want app.kubernetes.io/name %s and instance %s", sel, tc.appName, tc.release)
			}
			for _, o := range objs {
				if o.GetLabels()[nameLabel] != tc.appName {
					t.Errorf("%s %s is labelled app.kubernetes.io/name=%s, want %s", o.GetKind(), o.GetName(), o.GetLabels()[nameLabel], tc.appName)
				}
			}
			cm := find(objs, "ConfigMap", tc.fullname+"-config")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			cfg, err := config.Parse([]byte(data), "ConfigMap", webhooks.Sections())
			if err != nil {
				t.Fatal(err)
			}
			var file map[string]any
			if err := yaml.Unmarshal([]byte(data), &file); err != nil {
				t.Fatal(err)
			}
			if got := setting(file, "rules.claimguard.webhookConfigurationName"); got != tc.fullname {
				t.Errorf("claimguard manages the webhook configuration %v, want the release's %s (%+v)", got, tc.fullname, cfg.Rules["claimguard"])
			}
		})
	}
}

// setting reads a dotted path of a decoded document.
func setting(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		sub, _ := v.(map[string]any)
		v = sub[k]
	}
	return v
}

// identities are objects' kind, namespace and name, sorted.
func identities(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// TestTwoReleasesDoNotClash installs two releases into one namespace, each
// with every optional object: no object of one has the kind, namespace
// and name of one of the other's, cluster-scoped objects and webhook
// configurations included. Releases not named steward do not select each
// other's pods either; a release named steward selects its pods as it
// always did, by app.kubernetes.io/name alone (docs/install.md: give a
// second release in its namespace its own namespace).
func TestTwoReleasesDoNotClash(t *testing.T) {
	for _, mode := range []string{"cert-manager", "self-managed"} {
		for _, pair := range [][2]string{{"steward", "canary"}, {"canary", "prod"}} {
			t.Run(mode+", "+pair[0]+" and "+pair[1], func(t *testing.T) {
				flags := append([]string{"--set", "certificates.mode=" + mode, "--values", allValuesFile}, append(unnamed, allOptionalObjects...)...)
				a := helmTemplateRelease(t, pair[0], DefaultNamespace, flags...)
				b := helmTemplateRelease(t, pair[1], DefaultNamespace, flags...)
				seen := map[string]bool{}
				for _, id := range identities(a) {
					seen[id] = true
				}
				for _, id := range identities(b) {
					if seen[id] {
						t.Errorf("both releases render %s", id)
					}
				}
				if len(a) < 20 || len(b) != len(a) {
					t.Errorf("the releases render %d and %d objects", len(a), len(b))
				}
				if pair[0] == Name {
					return
				}
				for _, x := range [][2][]*unstructured.Unstructured{{a, b}, {b, a}} {
					for _, sel := range selectors(t, x[0]) {
						for _, pods := range podLabels(x[1]) {
							if sel.selector.Matches(labels.Set(pods)) {
								t.Errorf("the %s selects the other release's pods (%v)", sel.of, pods)
							}
						}
					}
				}
			})
		}
	}
}

type objectSelector struct {
	of       string
	selector labels.Selector
}

// selectors are the label selectors of objects that select pods.
func selectors(t *testing.T, objs []*unstructured.Unstructured) []objectSelector {
	t.Helper()
	var out []objectSelector
	for _, o := range objs {
		var m map[string]string
		switch o.GetKind() {
		case "Service":
			m, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector")
		case "Deployment", "PodDisruptionBudget":
			m, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		default:
			continue
		}
		if len(m) == 0 {
			t.Fatalf("%s %s selects no labels", o.GetKind(), o.GetName())
		}
		out = append(out, objectSelector{of: o.GetKind() + " " + o.GetName(), selector: labels.SelectorFromSet(m)})
	}
	return out
}

func podLabels(objs []*unstructured.Unstructured) []map[string]string {
	var out []map[string]string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			out = append(out, l)
		}
	}
	return out
}

// TestChartLabelsEveryObject: every object the chart installs, the
// pods too, carries the standard labels of a Helm chart.
func TestChartLabelsEveryObject(t *testing.T) {
	var chart struct{ Version, AppVersion string }
	data, err := os.ReadFile(filepath.Join(chartPath, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"helm.sh/chart":                Name + "-" + chart.Version,
		nameLabel:                      Name,
		instanceLabel:                  "canary",
		"app.kubernetes.io/version":    chart.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
		partOfLabel:                    Name,
	}
	for _, mode := range []string{"cert-manager", "self-managed"} {
		flags := append([]string{"--set", "certificates.mode=" + mode + ",policyReportCRDs.install=true", "--values", allValuesFile}, append(unnamed, allOptionalObjects...)...)
		objs := helmTemplateRelease(t, "canary", DefaultNamespace, flags...)
		for _, o := range objs {
			got := map[string]map[string]string{"": o.GetLabels()}
			if o.GetKind() == "Deployment" {
				got["pod template of "], _, _ = unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			}
			for where, l := range got {
				for k, v := range want {
					if l[k] != v {
						t.Errorf("%s%s %s: label %s is %q, want %q", where, o.GetKind(), o.GetName(), k, l[k], v)
					}
				}
			}
		}
	}
}
