package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
)

// chartPath is the chart, from this package's directory.
var chartPath = filepath.Join("..", ChartDir)

// helm is Helm's CLI, built by `make` into the tool cache, which exports
// its path.
func helm(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HELM")
	if path == "" {
		t.Skip("HELM is not set: run through make, which builds helm")
	}
	return path
}

// helmTemplate renders the chart as `helm template` does for an install
// into namespace, with extra flags (--set, --values).
func helmTemplate(t *testing.T, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	return helmTemplateRelease(t, Name, namespace, flags...)
}

// helmTemplateRelease is helmTemplate for a release named release.
func helmTemplateRelease(t *testing.T, release, namespace string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helmTemplateReleaseErr(t, release, namespace, flags...)
	if err != nil {
		t.Fatalf("helm template %s %s: %v", release, strings.Join(flags, " "), err)
	}
	return parseObjects(t, out)
}

func helmTemplateErr(t *testing.T, namespace string, flags ...string) ([]byte, error) {
	t.Helper()
	return helmTemplateReleaseErr(t, Name, namespace, flags...)
}

func helmTemplateReleaseErr(t *testing.T, release, namespace string, flags ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", release, chartPath, "--namespace", namespace}, flags...)
	cmd := exec.Command(helm(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(err.Error() + ": " + stderr.String())
	}
	return out, nil
}

// kustomize builds a kustomization directory with kubectl, as an installer
// would.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	return parseObjects(t, out)
}

// renderTo writes what `steward manifests` renders for o into a temporary
// directory and returns it.
func renderTo(t *testing.T, o Options) string {
	t.Helper()
	files, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

func parseObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// byKey keys objects by kind, namespace and name, the identity the API
// server gives them; the order documents come in means nothing.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		key := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		if _, dup := out[key]; dup {
			t.Errorf("%s is rendered twice", key)
		}
		out[key] = o.Object
	}
	return out
}

// byKeyDiff compares two sets of objects by identity, whatever their
// order: empty when they are the same.
func byKeyDiff(t *testing.T, want, got []*unstructured.Unstructured) string {
	t.Helper()
	return cmp.Diff(byKey(t, want), byKey(t, got))
}

// withoutNamespaceObject drops the Namespace object kustomize installs:
// Helm installs into a namespace it is given (helm install
// --create-namespace) and does not own it.
func withoutNamespaceObject(t *testing.T, objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	found := false
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetName() == ns {
			found = true
			continue
		}
		out = append(out, o)
	}
	if !found {
		t.Fatalf("the kustomize build has no Namespace %s", ns)
	}
	return out
}

// helmLabels are the standard labels of a Helm chart that only the chart
// sets: what the release is, and who manages it.
var helmLabels = []string{"helm.sh/chart", instanceLabel, "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// withoutHelmLabels drops helmLabels from every object's labels and its
// pod template's, whichever install rendered them (TestChartLabels checks
// them).
func withoutHelmLabels(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		o = o.DeepCopy()
		for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
			labels, found, _ := unstructured.NestedStringMap(o.Object, path...)
			if !found {
				continue
			}
			for _, l := range helmLabels {
				delete(labels, l)
			}
			_ = unstructured.SetNestedStringMap(o.Object, labels, path...)
		}
		out = append(out, o)
	}
	return out
}

// sameObjects fails unless both sets of objects are the same, as parsed
// objects, but for the labels only the chart sets (helmLabels).
func sameObjects(t *testing.T, helmObjs, kustomizeObjs []*unstructured.Unstructured) {
	t.Helper()
	if diff := byKeyDiff(t, withoutHelmLabels(kustomizeObjs), withoutHelmLabels(helmObjs)); diff != "" {
		t.Errorf("helm template differs from kustomize (-kustomize +helm):\n%s", diff)
	}
}

// TestCommittedChartMatchesRender fails when charts/steward differs from
// what the code renders: run `make generate` and commit.
func TestCommittedChartMatchesRender(t *testing.T) {
	files, err := RenderChart(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := Write(chartPath, files); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(chartPath, path))
		if err != nil {
			t.Errorf("%s is rendered but not committed (run make generate): %v", path, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s differs from the rendered chart (run make generate) (-rendered +committed):\n%s", path, diff)
		}
	}
	err = filepath.WalkDir(chartPath, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartPath, path)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			t.Errorf("%s is committed but no longer rendered; delete it", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestChartLints(t *testing.T) {
	for _, mode := range []string{"cert-manager", "self-managed"} {
		out, err := exec.Command(helm(t), "lint", "--strict", chartPath, "--set", "certificates.mode="+mode).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint --strict (certificates.mode=%s): %v\n%s", mode, err, out)
		}
	}
}

// TestChartRendersTheOverlays proves the chart's defaults install what the
// kustomize overlays install: cert-manager by default, and self-managed
// certificates when asked. Only the Namespace object differs, which Helm
// leaves to `helm install --create-namespace`.
func TestChartRendersTheOverlays(t *testing.T) {
	tests := map[string]struct {
		reason string
		flags  []string
	}{
		"cert-manager": {
			reason: "the chart's defaults are the default overlay's",
		},
		"self-managed-certs": {
			reason: "certificates.mode=self-managed is the self-managed overlay, its Deployment patched as kustomize patches it",
			flags:  []string{"--set", "certificates.mode=self-managed"},
		},
	}
	for overlay, tc := range tests {
		t.Run(overlay, func(t *testing.T) {
			got := helmTemplate(t, DefaultNamespace, tc.flags...)
			want := withoutNamespaceObject(t, kustomize(t, filepath.Join("overlays", overlay)), DefaultNamespace)
			t.Log(tc.reason)
			sameObjects(t, got, want)
		})
	}
}

// TestChartFollowsTheReleaseNamespace installs into another namespace,
// by the release's namespace and by namespaceOverride, and proves it is
// what `steward manifests --namespace` renders: the objects, RBAC
// subjects, certificate names, CA injection and every webhook's exclusion
// of Steward's own namespace follow.
func TestChartFollowsTheReleaseNamespace(t *testing.T) {
	const ns = "steward-ops"
	dir := renderTo(t, Options{Namespace: ns})
	tests := map[string]struct {
		release string
		flags   []string
		overlay string
	}{
		"release namespace, cert-manager":   {release: ns, overlay: "cert-manager"},
		"release namespace, self-managed":   {release: ns, overlay: "self-managed-certs", flags: []string{"--set", "certificates.mode=self-managed"}},
		"namespaceOverride, cert-manager":   {release: "default", overlay: "cert-manager", flags: []string{"--set", "namespaceOverride=" + ns}},
		"namespaceOverride, self-managed":   {release: "default", overlay: "self-managed-certs", flags: []string{"--set", "namespaceOverride=" + ns + ",certificates.mode=self-managed"}},
		"release namespace with monitoring": {release: ns, overlay: "cert-manager", flags: []string{"--set", "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := helmTemplate(t, tc.release, tc.flags...)
			want := withoutNamespaceObject(t, kustomize(t, filepath.Join(dir, "overlays", tc.overlay)), ns)
			if strings.Contains(name, "monitoring") {
				want = append(want, kustomize(t, filepath.Join(dir, "monitoring"))...)
			}
			sameObjects(t, got, want)
			for _, o := range got {
				data, _ := yaml.Marshal(o.Object)
				if strings.Contains(string(data), DefaultNamespace) {
					t.Errorf("%s %s still names %s", o.GetKind(), o.GetName(), DefaultNamespace)
				}
			}
		})
	}
}

// TestChartMonitoringMatchesTheMonitoringDirectory turns on the
// ServiceMonitor, PrometheusRule and dashboard and proves they are those
// of manifests/monitoring, alert templates included.
func TestChartMonitoringMatchesTheMonitoringDirectory(t *testing.T) {
	got := helmTemplate(t, DefaultNamespace, "--set", "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true")
	want := withoutNamespaceObject(t, kustomize(t, filepath.Join("overlays", "cert-manager")), DefaultNamespace)
	want = append(want, kustomize(t, "monitoring")...)
	sameObjects(t, got, want)
}

// normalizeConfig replaces the configuration file in Steward's ConfigMap
// with the configuration Steward reads from it, defaults filled in: Helm
// writes the values as given, `steward manifests` writes them defaulted.
func normalizeConfig(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		data, found, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
		if o.GetKind() != "ConfigMap" || !found {
			continue
		}
		cfg, err := config.Parse([]byte(data), "ConfigMap", webhooks.Sections())
		if err != nil {
			t.Fatalf("Steward would refuse the configuration the install writes: %v\n%s", err, data)
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(o.Object, string(out), "data", "config.yaml"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestChartRendersTheConfigurationAsStewardManifestsDoes gives the chart
// configurations as values and proves the install is the one `steward
// manifests --config` renders for the same file: the identities each rule
// exempts are in its webhooks' matchConditions exactly as Steward writes
// them (clauses for empty lists left out, defaults for unset ones), and
// Steward reads the same configuration.
//
// With a values file setting every value the chart has for adapting an
// install too, the install is the same but for what those values
// change, as withChartValues applies them.
func TestChartRendersTheConfigurationAsStewardManifestsDoes(t *testing.T) {
	tests := map[string]struct {
		reason string
		config string
		// values is a values file given besides the configuration.
		values string
	}{
		"every value for adapting an install": {
			reason: "the chart's own values change only what they are for, whatever the configuration",
			config: `
rules:
  fleetguard:
    mode: warn
    agentUsers: ["system:serviceaccount:cattle-fleet-system:fleet-agent", "system:serviceaccount:gitops:deployer"]`,
			values: allValuesFile,
		},
		"defaults": {
			reason: "values.yaml holds the default configuration",
			config: `{}`,
		},
		"another GitOps agent": {
			reason: "Fleet impersonating a deployer service account is exempt in fleetguard's matchConditions",
			config: `
rules:
  fleetguard:
    agentUsers: ["system:serviceaccount:cattle-fleet-system:fleet-agent", "system:serviceaccount:gitops:deployer"]
    agentGroups: ["system:serviceaccounts:gitops"]`,
		},
		"no Fleet agent users or groups": {
			reason: "fleetguard leaves the clauses of empty identity lists out of its expressions",
			config: `
rules:
  fleetguard:
    agentUsers: []
    agentGroups: []`,
		},
		"agent users left to Steward's default": {
			reason: "a null list is unset: Steward's defaults apply, and the chart writes them",
			config: `
rules:
  fleetguard:
    agentUsers: null
    agentGroups: ["system:serviceaccounts:gitops"]`,
		},
		"OLM and Flux installed elsewhere": {
			reason: "installplanguard exempts its OLM and controller users as one list; suspendnotice matches its controllers' Events; empty lists mean the defaults",
			config: `
rules:
  installplanguard:
    olmUsers: ["system:serviceaccount:operators:olm-operator-serviceaccount"]
    clusterControllerUsers: []
  suspendnotice:
    controllers: ["kustomize-controller", "helm-controller"]`,
		},
		"identities CEL must escape": {
			reason: "names with quotes, backslashes and non-ASCII letters are quoted as Steward quotes them",
			config: `
exemptUsers: ["ops-bot"]
rules:
  fleetguard:
    agentUsers: ["jane \"the admin\" <ops@example.com>", "back\\slash", "zoë"]`,
		},
		"modes and settings": {
			reason: "modes other than off and rule settings change only what Steward reads",
			config: `
breakGlassGroup: platform:break-glass
exemptGroups: ["platform:automation"]
rules:
  apimigration: {mode: warn, fluxVersion: "2.8"}
  claimguard: {mode: audit}
  fleetguard:
    mode: warn
    ignoredFields:
    - {group: apps, kind: Deployment, paths: ["/spec/replicas"]}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			body := strings.TrimPrefix(tc.config, "\n")
			valuesYAML := "config: {}\n"
			file := "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"
			if body != "{}" {
				valuesYAML = "config:\n" + indent(body, "  ")
				file += body + "\n"
			}
			values := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(values, []byte(valuesYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse([]byte(file), "test", webhooks.Sections())
			if err != nil {
				t.Fatal(err)
			}
			flags := []string{"--values", values}
			if tc.values != "" {
				flags = append([]string{"--values", tc.values}, append(flags, append(unnamed, allOptionalObjects...)...)...)
			}
			got := helmTemplate(t, DefaultNamespace, flags...)
			dir := renderTo(t, Options{Config: &cfg})
			want := withoutNamespaceObject(t, kustomize(t, filepath.Join(dir, "overlays", "cert-manager")), DefaultNamespace)
			if tc.values != "" {
				want = append(want, kustomize(t, filepath.Join(dir, "monitoring"))...)
				want = withChartValues(t, install{ns: DefaultNamespace, name: Name}, want, chartValuesFile(t, tc.values))
			}
			normalizeConfig(t, got)
			normalizeConfig(t, want)
			t.Log(tc.reason)
			sameObjects(t, got, want)
		})
	}
}

// TestChartRefusesWhatItCannotRender: a rule turned off, or Events turned
// off, change Steward's registration and RBAC beyond what the chart
// templates, so the chart fails and says how to render such an install,
// rather than register webhooks Steward does not serve. Values the chart
// does not know fail too (values.schema.json), rather than be ignored.
func TestChartRefusesWhatItCannotRender(t *testing.T) {
	tests := map[string]struct {
		set, want string
	}{
		"a rule turned off":                {set: "config.rules.claimguard.mode=off", want: `config.rules.claimguard.mode: off`},
		"no Events":                        {set: "config.recordEventsFor=none", want: `config.recordEventsFor: none`},
		"an unknown cert mode":             {set: "certificates.mode=vault", want: `/certificates/mode`},
		"a misspelt value":                 {set: "replica=5", want: `'replica' not allowed`},
		"an argument not a flag":           {set: "extraArgs={debug}", want: `/extraArgs/0`},
		"a pull secret unnamed":            {set: "imagePullSecrets[0].nam=x", want: `/imagePullSecrets/0`},
		"a webhook Steward has not":        {set: `webhooks.fleetgaurd\.steward\.dev.timeoutSeconds=5`, want: `'fleetgaurd.steward.dev' not allowed`},
		"a timeout the API server refuses": {set: `webhooks.fleetguard\.steward\.dev.timeoutSeconds=31`, want: `/webhooks/fleetguard.steward.dev/timeoutSeconds`},
		"an interval without a unit":       {set: "monitoring.serviceMonitor.interval=30", want: `/monitoring/serviceMonitor/interval`},
		"no port to the API server":        {set: "networkPolicy.apiServerPorts={}", want: `/networkPolicy/apiServerPorts`},
		"a failure policy misspelt":        {set: `webhooks.fleetguard\.steward\.dev.failurePolicy=ignore`, want: `/webhooks/fleetguard.steward.dev/failurePolicy`},
		"a delay not a duration":           {set: "shutdown.delay=5", want: `/shutdown/delay`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := helmTemplateErr(t, DefaultNamespace, "--set", tc.set)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded", tc.set)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not say %q: %v", tc.want, err)
			}
			if strings.HasPrefix(tc.set, "config.") && !strings.Contains(tc.want, "/config/") && !strings.Contains(err.Error(), "steward manifests --config") {
				t.Errorf("the error does not say how to render the install: %v", err)
			}
		})
	}
}

// TestChartRefusesTheConfigurationsStewardRefuses gives the chart, as its
// config value, each configuration file Steward refuses
// (webhooks/config/testdata/configs-refused.yaml): values.schema.json
// refuses it too, naming the field, so helm template, lint and install fail where
// Steward's pods would not start. The chart's defaults fill in what some
// files lack; those are left out, with the reason.
func TestChartRefusesTheConfigurationsStewardRefuses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "webhooks", "config", "testdata", "configs-refused.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name, At, File, Chart string
		Header                *bool
	}
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Chart != "" {
				t.Skip(tc.Chart)
			}
			checked++
			values := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(values, []byte("config:\n"+indent(tc.File, "  ")), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := helmTemplateErr(t, DefaultNamespace, "--values", values)
			if err == nil {
				t.Fatalf("helm template accepts the configuration Steward refuses:\n%s", tc.File)
			}
			if want := "at '/config" + strings.TrimSuffix(tc.At, "/"); !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name the field (%s): %v", want, err)
			}
		})
	}
	if checked < 20 {
		t.Errorf("only %d configurations were given to the chart", checked)
	}
}

// TestChartValues checks the values that are the chart's own: image,
// replicas, resources, scheduling, the PodDisruptionBudget and the
// shutdown.
func TestChartValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`
image: {repository: registry.example.com/steward, tag: v9.9.9, pullPolicy: Always}
replicas: 5
resources: {requests: {cpu: 250m, memory: 128Mi}, limits: {memory: 512Mi}}
priorityClassName: ""
podAnnotations: {example.com/team: platform}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
podDisruptionBudget: {enabled: false}
shutdown: {delay: 15s, timeout: 30s, terminationGracePeriodSeconds: 60}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := helmTemplate(t, DefaultNamespace, "--values", values)
	if pdb := find(objs, "PodDisruptionBudget", Name); pdb != nil {
		t.Error("podDisruptionBudget.enabled=false still renders the PodDisruptionBudget")
	}
	d := find(objs, "Deployment", Name)
	if d == nil {
		t.Fatal("no Deployment")
	}
	pod := d.Object["spec"].(map[string]any)["template"].(map[string]any)
	spec := pod["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	got := map[string]any{
		"image":             c["image"],
		"imagePullPolicy":   c["imagePullPolicy"],
		"replicas":          d.Object["spec"].(map[string]any)["replicas"],
		"resources":         c["resources"],
		"priorityClassName": spec["priorityClassName"],
		"annotations":       pod["metadata"].(map[string]any)["annotations"],
		"nodeSelector":      spec["nodeSelector"],
		"tolerations":       spec["tolerations"],
		"gracePeriod":       spec["terminationGracePeriodSeconds"],
		"shutdownArgs":      shutdownArgs(c["args"]),
	}
	want := map[string]any{
		"image":           "registry.example.com/steward:v9.9.9",
		"imagePullPolicy": "Always",
		"replicas":        float64(5),
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "250m", "memory": "128Mi"},
			"limits":   map[string]any{"memory": "512Mi"},
		},
		"priorityClassName": nil,
		"annotations":       map[string]any{"example.com/team": "platform"},
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}},
		"gracePeriod":       float64(60),
		"shutdownArgs":      []string{"--shutdown-delay=15s", "--shutdown-timeout=30s"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Deployment does not follow the values (-want +got):\n%s", diff)
	}

	digest := helmTemplate(t, DefaultNamespace, "--set", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	c = find(digest, "Deployment", Name).Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if want := "ghcr.io/stewardhq/steward@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; c["image"] != want {
		t.Errorf("image with a digest is %v, want %s", c["image"], want)
	}
}

// TestChartTemplatesEverySettingTheRegistrationReads changes each setting
// of the configuration in turn (those the defaults leave unset too, as
// the schema lists them) and renders the manifests: a
// setting that changes anything but the ConfigMap must be one the chart
// templates (chartLists) or refuses (chartRefused, mode off). A rule that
// starts writing a new setting into its registration fails here until the
// chart follows it.
func TestChartTemplatesEverySettingTheRegistrationReads(t *testing.T) {
	def, err := toMap(config.Defaults(webhooks.Sections()))
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := Render(Options{})
	if err != nil {
		t.Fatal(err)
	}
	handled := chartSettingPaths()
	checked := 0
	all := leaves(def, "")
	set := map[string]bool{}
	for _, l := range all {
		set[l.path] = true
	}
	for _, l := range schemaLeaves(config.Schema(webhooks.Sections()), "") {
		if !set[l.path] {
			all = append(all, l)
		}
	}
	for _, leaf := range all {
		for _, value := range perturbations(leaf.value) {
			cfgMap := deepCopy(def)
			setLeaf(cfgMap, leaf.path, value)
			data, err := yaml.Marshal(cfgMap)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(data, leaf.path, webhooks.Sections())
			if err != nil {
				continue // Steward refuses it; no install runs with it
			}
			checked++
			files, err := Render(Options{Config: &cfg})
			if err != nil {
				t.Fatal(err)
			}
			var changed []string
			for path, data := range files {
				if path != "base/config.yaml" && !bytes.Equal(data, baseline[path]) {
					changed = append(changed, path)
				}
			}
			if len(changed) == 0 {
				continue
			}
			sort.Strings(changed)
			ok := false
			for _, h := range handled {
				ok = ok || leaf.path == h || strings.HasPrefix(leaf.path, h+".")
			}
			if !ok {
				t.Errorf("setting %s to %v changes %v, and the chart neither templates nor refuses it", leaf.path, value, changed)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d changed configurations were valid: the test proves nothing", checked)
	}
}

type leaf struct {
	path  string
	value any
}

// leaves lists a configuration's settings: scalars and lists of scalars.
func leaves(m map[string]any, prefix string) []leaf {
	var out []leaf
	for _, k := range sortedKeys(m) {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		if sub, ok := m[k].(map[string]any); ok {
			out = append(out, leaves(sub, path)...)
			continue
		}
		out = append(out, leaf{path: path, value: m[k]})
	}
	return out
}

// schemaLeaves lists the settings a configuration schema describes,
// scalars and lists, each with its type's zero value: the settings an
// empty value leaves out of the defaults (omitempty) are found here.
func schemaLeaves(schema map[string]any, prefix string) []leaf {
	var out []leaf
	props, _ := schema["properties"].(map[string]any)
	for _, k := range sortedKeys(props) {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		s, _ := props[k].(map[string]any)
		types := fmt.Sprint(s["type"])
		switch {
		case s["properties"] != nil:
			out = append(out, schemaLeaves(s, path)...)
		case strings.Contains(types, "boolean"):
			out = append(out, leaf{path: path, value: false})
		case strings.Contains(types, "string") || s["enum"] != nil:
			out = append(out, leaf{path: path, value: ""})
		case strings.Contains(types, "array"):
			out = append(out, leaf{path: path, value: []any{}})
		}
	}
	return out
}

func perturbations(v any) []any {
	switch t := v.(type) {
	case bool:
		return []any{!t}
	case string:
		return []any{"warn", "audit", "off", "none", "2.8", "perturbed", "system:serviceaccount:perturbed:x"}
	case []any:
		return []any{[]any{}, []any{"system:serviceaccount:perturbed:x"}}
	case nil:
		return []any{[]any{"system:serviceaccount:perturbed:x"}}
	}
	return nil
}

func setLeaf(m map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = v
}

// TestRenderChartRefusesWhatTheChartRefuses: `steward manifests
// --chart-dir` with a configuration the chart cannot render fails, rather
// than write a chart whose defaults `helm install` refuses.
func TestRenderChartRefusesWhatTheChartRefuses(t *testing.T) {
	for name, file := range map[string]string{
		"a rule turned off": "rules:\n  claimguard: {mode: \"off\"}\n",
		"no Events":         "recordEventsFor: none\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"+file), "test", webhooks.Sections())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := RenderChart(Options{Config: &cfg}); err == nil {
				t.Error("the chart was rendered")
			}
		})
	}
}

// TestChartPolicyReportCRDsMatchTheDirectory: the chart installs the
// PolicyReport CRDs only when asked (Kyverno or Policy Reporter may own
// them), and then exactly those of manifests/policyreport-crds.
func TestChartPolicyReportCRDsMatchTheDirectory(t *testing.T) {
	crds := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				out = append(out, o)
			}
		}
		return out
	}
	if got := crds(helmTemplate(t, DefaultNamespace)); len(got) != 0 {
		t.Errorf("the chart installs %d CRDs by default, want none: the PolicyReport CRDs are opt-in", len(got))
	}
	got := crds(helmTemplate(t, DefaultNamespace, "--set", "policyReportCRDs.install=true"))
	want := kustomize(t, "policyreport-crds")
	if len(want) != 2 {
		t.Fatalf("manifests/policyreport-crds renders %d objects, want the two CRDs", len(want))
	}
	// The upstream files carry no labels; the chart adds its own.
	for _, o := range got {
		o.SetLabels(nil)
	}
	if diff := byKeyDiff(t, want, got); diff != "" {
		t.Errorf("policyReportCRDs.install=true must install manifests/policyreport-crds (-kustomize +helm):\n%s", diff)
	}
}

// shutdownArgs are the --shutdown-* flags among a container's args.
func shutdownArgs(args any) []string {
	var out []string
	list, _ := args.([]any)
	for _, a := range list {
		if s, _ := a.(string); strings.HasPrefix(s, "--shutdown-") {
			out = append(out, s)
		}
	}
	return out
}
