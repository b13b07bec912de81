package manifests

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/rule"
)

// chartMetadata is Chart.yaml: the chart's version follows the image tag
// it installs by default.
func chartMetadata(image string) []byte {
	appVersion := imageTag(image)
	return []byte(header + fmt.Sprintf(`apiVersion: v2
name: steward
description: Admission webhooks that keep GitOps and control-plane objects honest (Crossplane, Flux, Fleet, OLM).
type: application
version: %s
appVersion: %q
# matchConditions, which keep GitOps agents' writes away from Steward, are
# generally available from Kubernetes 1.30.
kubeVersion: ">=1.30.0-0"
home: https://github.com/stewardhq/steward
sources:
- https://github.com/stewardhq/steward
keywords: [admission, webhook, gitops, crossplane, flux, fleet, olm]
`, strings.TrimPrefix(appVersion, "v"), appVersion))
}

func imageRepository(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "latest"
}

// chartValues is values.yaml. The defaults are read from the typed
// objects the kustomize base is rendered from, so both install the same.
func chartValues(in install, image string, cfg webhooks.Config) ([]byte, error) {
	d := install{ns: in.ns, image: image}.deployment()
	pod := d.Spec.Template.Spec
	var resources any
	for _, c := range pod.Containers {
		if c.Name == Name {
			resources = c.Resources
		}
	}
	pdb := in.podDisruptionBudget()
	config, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	block := func(v any) (string, error) {
		data, err := yaml.Marshal(v)
		if err != nil {
			return "", err
		}
		return indent(string(data), "  "), nil
	}
	res, err := block(resources)
	if err != nil {
		return nil, err
	}
	return []byte(header + fmt.Sprintf(`
# Steward runs in the release's namespace (helm install --namespace
# steward-system --create-namespace), or in namespaceOverride when it is set.
# Its objects, RBAC subjects, serving certificate names and every webhook's
# exclusion of Steward's own namespace follow.
namespaceOverride: ""

image:
  repository: %s
  # tag defaults to the chart's appVersion.
  tag: ""
  # digest (sha256:...) pins the image, in place of the tag.
  digest: ""
  # pullPolicy is left to Kubernetes when empty (IfNotPresent for a tag).
  pullPolicy: ""

# Replicas spread across nodes (and, when possible, zones).
replicas: %d

# No CPU limit: throttling an admission webhook turns into API server
# timeouts. Steward sets Go's soft memory limit to 90%% of the memory limit.
resources:
%s
# Admission is on the path of every guarded write.
priorityClassName: %s

podAnnotations: {}
nodeSelector: {}
tolerations: []
affinity: {}

podDisruptionBudget:
  enabled: true
  maxUnavailable: %s

# On SIGTERM (a rollout, a drain) a replica reports unready at once and
# keeps serving for delay, closing each connection after its answer, so
# the API server moves its calls to the other replicas; then it closes its
# listener, gives the connections left up to delay again to carry one last
# call, and answers the requests in flight, within timeout. The kubelet
# kills it terminationGracePeriodSeconds after SIGTERM: keep that above
# delay + timeout. Raise delay where endpoints take longer than a few
# seconds to drop a terminating Pod. See docs/reliability.md.
shutdown:
  delay: %s
  timeout: %s
  terminationGracePeriodSeconds: %d

certificates:
  # cert-manager: cert-manager issues the serving certificate and injects
  # its CA into the webhook configurations (cert-manager must be installed).
  # self-managed: Steward creates its own CA and serving certificate in the
  # Secret %s, writes the CA into its webhook configurations and
  # rotates both.
  mode: cert-manager

# Opt-in: these need the Prometheus Operator's CRDs (and, for the
# dashboard, Grafana's dashboard sidecar). Bind the ClusterRole
# %s to Prometheus' service account.
monitoring:
  serviceMonitor:
    enabled: false
  prometheusRule:
    enabled: false
  dashboard:
    enabled: false

# The background audit publishes its findings as wgpolicyk8s.io/v1alpha2
# PolicyReports, whose CRDs Kyverno and Policy Reporter also install.
# install: true installs them with Steward (and helm uninstall removes
# them, with every report); leave it false where they are installed.
policyReportCRDs:
  install: false

# config is Steward's configuration file (StewardConfiguration), written
# into the ConfigMap Steward reads. Every rule's mode (enforce, warn,
# audit) and settings go here; see docs/configuration.md.
# The identity lists the webhooks' matchConditions hold are written into
# them from here:
%s# Settings that change what is registered beyond that are refused; render
# those installs with "steward manifests --config FILE":
%sconfig:
%s`, imageRepository(image), *d.Spec.Replicas, res, pod.PriorityClassName, pdb.Spec.MaxUnavailable.String(),
		shutdownDelay, shutdownTimeout, *pod.TerminationGracePeriodSeconds, SecretName, MetricsReaderRole, commentList(listPaths()), commentList(refusedSettings()), indent(string(config), "  "))), nil
}

func commentList(items []string) string {
	var b strings.Builder
	for _, i := range items {
		fmt.Fprintf(&b, "#   %s\n", i)
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func listPaths() []string {
	var out []string
	for _, l := range chartLists() {
		out = append(out, "rules."+l.rule+"."+l.key)
	}
	return out
}

func refusedSettings() []string {
	out := []string{"mode " + string(rule.Off)}
	for _, r := range chartRefused() {
		out = append(out, r.path+" other than "+strings.Join(r.allowed, ", "))
	}
	return out
}

// chartSchema is values.schema.json: Helm checks the values against it
// before rendering, so a misspelt value fails the install instead of being
// ignored. The configuration under config is checked by Steward itself,
// strictly, at start-up (and by the chart's tests against steward
// manifests).
func chartSchema() ([]byte, error) {
	str := map[string]any{"type": "string"}
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	toggle := obj(map[string]any{"enabled": map[string]any{"type": "boolean"}})
	// A Go duration, as the flags take it (5s, 1m30s).
	duration := map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`}
	schema := obj(map[string]any{
		"namespaceOverride": str,
		"image": obj(map[string]any{
			"repository": map[string]any{"type": "string", "minLength": 1},
			"tag":        str,
			"digest":     map[string]any{"type": "string", "pattern": "^$|^[a-z0-9]+:[a-f0-9]+$"},
			"pullPolicy": map[string]any{"enum": []string{"", "Always", "IfNotPresent", "Never"}},
		}, "repository"),
		"replicas":          map[string]any{"type": "integer", "minimum": 0},
		"resources":         map[string]any{"type": "object"},
		"priorityClassName": str,
		"podAnnotations":    map[string]any{"type": "object", "additionalProperties": str},
		"nodeSelector":      map[string]any{"type": "object", "additionalProperties": str},
		"tolerations":       map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"affinity":          map[string]any{"type": "object"},
		"podDisruptionBudget": obj(map[string]any{
			"enabled":        map[string]any{"type": "boolean"},
			"maxUnavailable": map[string]any{"type": []string{"integer", "string"}},
		}),
		"shutdown": obj(map[string]any{
			"delay":                         duration,
			"timeout":                       duration,
			"terminationGracePeriodSeconds": map[string]any{"type": "integer", "minimum": 0},
		}, "delay", "timeout", "terminationGracePeriodSeconds"),
		"certificates": obj(map[string]any{
			"mode": map[string]any{"enum": []string{"cert-manager", "self-managed"}},
		}, "mode"),
		"monitoring": obj(map[string]any{
			"serviceMonitor": toggle,
			"prometheusRule": toggle,
			"dashboard":      toggle,
		}),
		"policyReportCRDs": obj(map[string]any{
			"install": map[string]any{"type": "boolean"},
		}),
		"config": map[string]any{"type": "object"},
	})
	schema["$schema"] = "http://json-schema.org/draft-07/schema#"
	schema["title"] = "Values of Steward's Helm chart, generated by `steward manifests` (make generate)"
	data, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// chartHelpers is templates/_helpers.tpl.
func chartHelpers() ([]byte, error) {
	defaults, err := toMap(webhooks.DefaultConfig())
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("{{/* Generated by `steward manifests` (make generate). Do not edit. */}}\n")
	b.WriteString(`
{{/* The namespace Steward runs in: namespaceOverride, or the release's. */}}
{{- define "steward.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{/* The container image: repository@digest, or repository:tag (the chart's appVersion by default). */}}
{{- define "steward.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* A list of strings as a CEL list literal, each quoted as Go quotes it, as Steward's rules write them. */}}
{{- define "steward.celList" -}}
[{{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ quote $s }}{{ end }}]
{{- end -}}
`)
	rules, _ := defaults["rules"].(map[string]any)
	for _, l := range chartLists() {
		section, _ := rules[l.rule].(map[string]any)
		def, err := json.Marshal(section[l.key])
		if err != nil {
			return nil, err
		}
		unset := `kindIs "invalid" $v`
		what := "unset"
		if l.emptyMeansDefault {
			unset = `or (kindIs "invalid" $v) (empty $v)`
			what = "unset or empty"
		}
		fmt.Fprintf(&b, `
{{/* config.rules.%[1]s.%[2]s as JSON, Steward's default when %[5]s. */}}
{{- define %[3]q -}}
{{- $v := dig "rules" %[1]q %[2]q nil (.Values.config | default dict) -}}
{{- if %[4]s -}}
%[6]s
{{- else -}}
{{- toJson $v -}}
{{- end -}}
{{- end -}}
`, l.rule, l.key, l.helper(), unset, what, def)
	}
	b.WriteString(`
{{/* Refuses values the chart cannot render as Steward would serve them. */}}
{{- define "steward.validate" -}}
{{- $cfg := .Values.config | default dict -}}
{{- if not (has .Values.certificates.mode (list "cert-manager" "self-managed")) -}}
{{- fail (printf "certificates.mode %q: must be cert-manager or self-managed" .Values.certificates.mode) -}}
{{- end -}}
`)
	for _, name := range sortedKeys(webhooks.DefaultConfig().Rules) {
		fmt.Fprintf(&b, `{{- if eq (dig "rules" %[1]q "mode" "" $cfg) %[2]q -}}
{{- fail "config.rules.%[1]s.mode: off leaves the rule's webhook entries, RBAC and caches out, which this chart does not render; install with the manifests \"steward manifests --config FILE\" renders, or use mode audit" -}}
{{- end -}}
`, name, rule.Off)
	}
	for _, r := range chartRefused() {
		allowed := []string{`""`}
		for _, a := range r.allowed {
			allowed = append(allowed, fmt.Sprintf("%q", a))
		}
		fmt.Fprintf(&b, `{{- $v := toString (dig %[1]s "" $cfg) -}}
{{- if not (has $v (list %[2]s)) -}}
{{- fail (printf "config.%[3]s: %%s %[4]s, which this chart does not render; install with the manifests \"steward manifests --config FILE\" renders" $v) -}}
{{- end -}}
`, quotedPath(r.path), strings.Join(allowed, " "), r.path, r.why)
	}
	b.WriteString("{{- end -}}\n")
	return []byte(b.String()), nil
}

func quotedPath(path string) string {
	var q []string
	for _, p := range strings.Split(path, ".") {
		q = append(q, fmt.Sprintf("%q", p))
	}
	return strings.Join(q, " ")
}
