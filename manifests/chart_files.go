package manifests

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
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
func chartValues(in install, image string, cfg config.Config) ([]byte, error) {
	d := install{ns: in.ns, image: image}.deployment()
	pod := d.Spec.Template.Spec
	var resources any
	for _, c := range pod.Containers {
		if c.Name == Name {
			resources = c.Resources
		}
	}
	pdb := in.podDisruptionBudget()
	interval := in.serviceMonitor().Spec.Endpoints[0].Interval
	cfgMap, err := toMap(cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range installNames() {
		deletePath(cfgMap, r.path)
	}
	config, err := yaml.Marshal(cfgMap)
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
	// The constraints' labelSelector is the chart's to fill in.
	var constraints []map[string]any
	for _, c := range pod.TopologySpreadConstraints {
		m, err := toMap(c)
		if err != nil {
			return nil, err
		}
		delete(m, "labelSelector")
		constraints = append(constraints, m)
	}
	spread, err := block(constraints)
	if err != nil {
		return nil, err
	}
	return []byte(header + fmt.Sprintf(`
# Steward's objects are named after the release: a release named steward
# (or whose name contains it) names them as the release, any other as
# <release>-steward, so two releases do not share an object. The
# webhook configurations, ClusterRoles and the webhook configuration
# names in the rules' settings (webhookConfigurationName) follow.
# nameOverride replaces "steward" in those names and in the
# app.kubernetes.io/name label; fullnameOverride replaces the whole name.
nameOverride: ""
fullnameOverride: ""

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
# Labels added to the pods' (the chart's own labels win).
podLabels: {}
nodeSelector: {}
tolerations: []
affinity: {}

# Spread across nodes, and zones where possible. A constraint without a
# labelSelector is given one selecting the release's pods.
topologySpreadConstraints:
%s
# Secrets ([{name: ...}]) to pull the image with.
imagePullSecrets: []

# Added to Steward's arguments (steward serve --help lists them), e.g.
# --client-ca-file with the CA mounted through extraVolumes and
# extraVolumeMounts, or --log-level=debug.
extraArgs: []
# Added to the container's environment.
extraEnvVars: []
# Added to the pod's volumes and the container's volume mounts.
extraVolumes: []
extraVolumeMounts: []

# A startup probe for the container; none by default: liveness only asks
# whether the process answers, and readiness waits for Steward's caches.
startupProbe: {}

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
  # Secret <full name>-serving-cert (%s for a release named steward),
  # writes the CA into its webhook configurations and rotates both.
  mode: cert-manager

%swebhooks: {}

# Opt-in: these need the Prometheus Operator's CRDs (and, for the
# dashboard, Grafana's dashboard sidecar). Bind the ClusterRole
# <full name>-metrics-reader (%s for a release named steward) to
# Prometheus' service account.
monitoring:
  serviceMonitor:
    enabled: false
    # Labels added to the ServiceMonitor's, for a Prometheus whose
    # serviceMonitorSelector asks for them (release: kube-prometheus-stack).
    additionalLabels: {}
    interval: %s
  prometheusRule:
    enabled: false
  dashboard:
    enabled: false

# A NetworkPolicy letting into Steward's pods only the API server's calls
# and metrics scrapes (on the webhook and metrics ports, from anywhere),
# and out of them only connections to the API server, on apiServerPorts
# (its Service's port and, for plugins that see the translated port, its
# endpoints'). The kubelet's probes always get through.
networkPolicy:
  enabled: false
  apiServerPorts: %s

# The background audit publishes its findings as wgpolicyk8s.io/v1alpha2
# PolicyReports, whose CRDs Kyverno and Policy Reporter also install.
# install: true installs them with Steward (and helm uninstall removes
# them, with every report); leave it false where they are installed.
policyReportCRDs:
  install: false

# config is Steward's configuration file (StewardConfiguration), written
# into the ConfigMap Steward reads. Every rule's mode (enforce, warn,
# audit) and settings go here; see docs/configuration.md. values.schema.json
# holds the file's schema, reflected from the types Steward reads it
# into: helm lint, template and install refuse what Steward would refuse
# at start-up (an unknown key, a value of the wrong type, an unknown
# mode), naming the field.
# The identity lists the webhooks' matchConditions hold are written into
# them from here:
%s# Settings that change what is registered beyond that are refused; render
# those installs with "steward manifests --config FILE":
%sconfig:
%s`, imageRepository(image), *d.Spec.Replicas, res, pod.PriorityClassName, spread, pdb.Spec.MaxUnavailable.String(),
		shutdownDelay, shutdownTimeout, *pod.TerminationGracePeriodSeconds, SecretName, webhooksComment(), MetricsReaderRole, interval, flow(defaultAPIServerPorts), commentList(listPaths()), commentList(refusedSettings()), indent(string(config), "  "))), nil
}

// flow writes a list of numbers as a YAML flow sequence.
func flow(items []int32) string {
	var s []string
	for _, i := range items {
		s = append(s, fmt.Sprint(i))
	}
	return "[" + strings.Join(s, ", ") + "]"
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

// webhookEntryNames are the names of every webhook entry, in the list's order.
// webhooksComment documents the chart's webhooks value, with the first
// entry as the example, and lists every entry.
func webhooksComment() string {
	names := webhookEntryNames()
	return fmt.Sprintf(`# Each webhook entry's failurePolicy (Fail or Ignore) and timeoutSeconds
# (1-30), and matchExpressions added to its namespaceSelector and
# objectSelector, by the entry's name:
#   webhooks:
#     %s:
#       failurePolicy: Ignore
#       timeoutSeconds: 5
#       namespaceSelector:
#         matchExpressions:
#         - {key: example.com/steward, operator: NotIn, values: ["off"]}
# Each entry's annotation steward.dev/failure-policy-<name> says why
# Steward chose its failure policy, and that the install changed it.
# The entries:
%s`, names[0], commentList(names))
}

func webhookEntryNames() []string {
	var out []string
	for _, spec := range defaultSpecs() {
		for _, wh := range spec.Webhooks {
			out = append(out, wh.Name)
		}
	}
	return out
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
		if r.installName {
			out = append(out, r.path+" other than the release's full name (the chart sets it)")
			continue
		}
		if len(r.allowed) == 0 {
			out = append(out, r.path+" (any value)")
			continue
		}
		out = append(out, r.path+" other than "+strings.Join(r.allowed, ", "))
	}
	return out
}

// chartSchema is values.schema.json: Helm checks the values against it
// before rendering, so a misspelt value fails the install instead of being
// ignored. The configuration under config is checked against the schema
// reflected from the types Steward decodes it into (config.Schema),
// so what Steward would refuse at start-up fails the install; what only
// Validate checks (names' form, durations' bounds) Steward refuses at
// start-up, naming the field.
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
	webhookSettings, webhook := webhooksSchema()
	// A name a Service may carry (DNS-1035 label), or empty.
	dnsLabel := map[string]any{"type": "string", "maxLength": 63, "pattern": "^$|^[a-z]([-a-z0-9]*[a-z0-9])?$"}
	schema := obj(map[string]any{
		"nameOverride":      dnsLabel,
		"fullnameOverride":  dnsLabel,
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
		"podLabels":         map[string]any{"type": "object", "additionalProperties": str},
		"imagePullSecrets": map[string]any{"type": "array", "items": obj(map[string]any{
			"name": map[string]any{"type": "string", "minLength": 1},
		}, "name")},
		"topologySpreadConstraints": map[string]any{"type": "array", "items": map[string]any{
			"type": "object", "required": []string{"maxSkew", "topologyKey", "whenUnsatisfiable"},
		}},
		"extraArgs":         map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": "^-"}},
		"extraEnvVars":      map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name"}}},
		"extraVolumes":      map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name"}}},
		"extraVolumeMounts": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name", "mountPath"}}},
		"startupProbe":      map[string]any{"type": "object"},
		"webhooks":          webhookSettings,
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
			"serviceMonitor": obj(map[string]any{
				"enabled":          map[string]any{"type": "boolean"},
				"additionalLabels": map[string]any{"type": "object", "additionalProperties": str},
				"interval":         map[string]any{"type": "string", "pattern": "^([0-9]+(ms|s|m|h))+$"},
			}),
			"prometheusRule": toggle,
			"dashboard":      toggle,
		}),
		"networkPolicy": obj(map[string]any{
			"enabled": map[string]any{"type": "boolean"},
			"apiServerPorts": map[string]any{"type": "array", "minItems": 1,
				"items": map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}},
		}),
		"policyReportCRDs": obj(map[string]any{
			"install": map[string]any{"type": "boolean"},
		}),
		// Steward's configuration file, as Steward decodes it: helm
		// lint, template and install refuse what Steward would refuse
		// at start-up, naming the field.
		"config": config.Schema(webhooks.Sections()),
	})
	schema["definitions"] = map[string]any{"webhook": webhook}
	schema["$schema"] = "http://json-schema.org/draft-07/schema#"
	schema["title"] = "Values of Steward's Helm chart, generated by `steward manifests` (make generate)"
	data, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// webhooksSchema is the schema of the webhooks value: settings of the
// webhook entries Steward registers, by name.
// The settings of one entry are the definition webhook.
func webhooksSchema() (schema, webhook map[string]any) {
	requirement := map[string]any{
		"type": "object", "additionalProperties": false,
		"required": []string{"key", "operator"},
		"properties": map[string]any{
			"key":      map[string]any{"type": "string", "minLength": 1},
			"operator": map[string]any{"enum": []string{"In", "NotIn", "Exists", "DoesNotExist"}},
			"values":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	}
	selector := map[string]any{
		"type": "object", "additionalProperties": false,
		"properties": map[string]any{"matchExpressions": map[string]any{"type": "array", "items": requirement}},
	}
	entry := map[string]any{
		"type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"failurePolicy":     map[string]any{"enum": []string{"Fail", "Ignore"}},
			"timeoutSeconds":    map[string]any{"type": "integer", "minimum": 1, "maximum": 30},
			"namespaceSelector": selector,
			"objectSelector":    selector,
		},
	}
	entries := map[string]any{}
	for _, name := range webhookEntryNames() {
		entries[name] = map[string]any{"$ref": "#/definitions/webhook"}
	}
	return map[string]any{"type": "object", "additionalProperties": false, "properties": entries}, entry
}

// chartHelpers is templates/_helpers.tpl.
func chartHelpers() ([]byte, error) {
	defaults, err := toMap(config.Defaults(webhooks.Sections()))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("{{/* Generated by `steward manifests` (make generate). Do not edit. */}}\n")
	fmt.Fprintf(&b, `
{{/* The chart's name: nameOverride, or steward. */}}
{{- define "steward.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of the release's objects (and the prefix of the others' names):
fullnameOverride, or the release's name when it contains the chart's name
(a release named steward is named steward, as before names followed the
release), or <release>-<name>.
*/}}
{{- define "steward.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "steward.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%%s-%%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The helm.sh/chart label. */}}
{{- define "steward.chart" -}}
{{- printf "%%s-%%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The labels that select the release's pods. A release whose full name is
steward selects them by app.kubernetes.io/name alone, as the chart always
did (a Deployment's selector cannot change); any other release also by
app.kubernetes.io/instance, so two releases in one namespace do not select
each other's pods.
*/}}
{{- define "steward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "steward.name" . }}
{{- if ne (include "steward.fullname" .) %[1]q }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- end -}}

{{/* The labels every object carries. */}}
{{- define "steward.labels" -}}
helm.sh/chart: {{ include "steward.chart" . }}
app.kubernetes.io/name: {{ include "steward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: %[1]s
{{- end -}}

{{/* The pods' labels: every object's, with podLabels. */}}
{{- define "steward.podLabels" -}}
{{- toYaml (merge (include "steward.labels" . | fromYaml) (.Values.podLabels | default dict)) -}}
{{- end -}}

{{/* topologySpreadConstraints, each selecting the release's pods unless it has a labelSelector. */}}
{{- define "steward.topologySpreadConstraints" -}}
{{- $out := list -}}
{{- range .Values.topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "steward.selectorLabels" $ | fromYaml)) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* A webhook entry's objectSelector: (list $ webhook-name selector-as-JSON), with the matchExpressions of the webhooks value added. */}}
{{- define "steward.webhookObjectSelector" -}}
{{- $root := index . 0 -}}
{{- $sel := index . 2 | fromJson -}}
{{- $extra := dig (index . 1) "objectSelector" "matchExpressions" list ($root.Values.webhooks | default dict) -}}
{{- if $extra -}}
{{- $_ := set $sel "matchExpressions" (concat (get $sel "matchExpressions" | default list) $extra) -}}
{{- end -}}
{{- toYaml $sel -}}
{{- end -}}

{{/* Why a webhook entry fails open or closed: (list $ webhook-name Steward's-policy reason). */}}
{{- define "steward.failurePolicyNote" -}}
{{- $policy := dig (index . 1) "failurePolicy" "" ((index . 0).Values.webhooks | default dict) -}}
{{- if or (not $policy) (eq $policy (index . 2)) -}}
{{- printf "%%s: %%s" (index . 2) (index . 3) -}}
{{- else -}}
{{- printf "%%s: set by the install (the chart's webhooks value). Steward's own choice is %%s: %%s" $policy (index . 2) (index . 3) -}}
{{- end -}}
{{- end -}}

{{/* The ServiceMonitor's labels: every object's, with monitoring.serviceMonitor.additionalLabels. */}}
{{- define "steward.serviceMonitorLabels" -}}
{{- toYaml (merge (include "steward.labels" . | fromYaml) (.Values.monitoring.serviceMonitor.additionalLabels | default dict)) -}}
{{- end -}}

{{/* The NetworkPolicy's egress ports: networkPolicy.apiServerPorts. */}}
{{- define "steward.apiServerPorts" -}}
{{- $out := list -}}
{{- range .Values.networkPolicy.apiServerPorts -}}
{{- $out = append $out (dict "port" . "protocol" "TCP") -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The namespace Steward runs in: namespaceOverride, or the release's. */}}
{{- define "steward.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{/* The container image: repository@digest, or repository:tag (the chart's appVersion by default). */}}
{{- define "steward.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%%s@%%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%%s:%%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* A list of strings as a CEL list literal, each quoted as Go quotes it, as Steward's rules write them. */}}
{{- define "steward.celList" -}}
[{{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ quote $s }}{{ end }}]
{{- end -}}
`, Name)
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
{{/* config as written into Steward's ConfigMap: the settings naming the release's objects are its full name when unset. */}}
{{- define "steward.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
`)
	for _, r := range installNames() {
		keys := strings.Split(r.path, ".")
		fmt.Fprintf(&b, `{{- $m := $cfg -}}
{{- range $k := list %[1]s -}}
{{- if not (kindIs "map" (get $m $k)) -}}
{{- $_ := set $m $k dict -}}
{{- end -}}
{{- $m = get $m $k -}}
{{- end -}}
{{- if not (get $m %[2]q) -}}
{{- $_ := set $m %[2]q (include "steward.fullname" $) -}}
{{- end -}}
`, quotedPath(strings.Join(keys[:len(keys)-1], ".")), keys[len(keys)-1])
	}
	b.WriteString(`{{- toYaml $cfg -}}
{{- end -}}

{{/* Refuses values the chart cannot render as Steward would serve them. */}}
{{- define "steward.validate" -}}
{{- $cfg := .Values.config | default dict -}}
{{- if not (has .Values.certificates.mode (list "cert-manager" "self-managed")) -}}
{{- fail (printf "certificates.mode %q: must be cert-manager or self-managed" .Values.certificates.mode) -}}
{{- end -}}
`)
	for _, name := range sortedKeys(config.Defaults(webhooks.Sections()).Rules) {
		// YAML reads an unquoted off as false.
		fmt.Fprintf(&b, `{{- if has (toString (dig "rules" %[1]q "mode" "" $cfg)) (list %[2]q "false") -}}
{{- fail "config.rules.%[1]s.mode: off leaves the rule's webhook entries, RBAC and caches out, which this chart does not render; install with the manifests \"steward manifests --config FILE\" renders, or use mode audit" -}}
{{- end -}}
`, name, rule.Off)
	}
	for _, r := range chartRefused() {
		if r.installName {
			fmt.Fprintf(&b, `{{- $v := toString (dig %[1]s "" $cfg) -}}
{{- if not (has $v (list "" (include "steward.fullname" .))) -}}
{{- fail (printf "config.%[2]s: %%s %[3]s, which this chart does not render: it sets it to the release's full name, %%s; install with the manifests \"steward manifests --config FILE\" renders" $v (include "steward.fullname" .)) -}}
{{- end -}}
`, quotedPath(r.path), r.path, r.why)
			continue
		}
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
