package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// ChartDir is where `make generate` writes the Helm chart, relative to the
// repository root.
const ChartDir = "charts/steward"

// The chart is rendered from the same typed objects as the kustomize base
// and overlays, the way Gatekeeper's chart is generated from its
// manifests: the objects are built with tokens where a value is
// templated, encoded as YAML, and each token is then replaced with the
// template expression that reads the value. Nothing in the chart is
// written twice; TestChart* prove that `helm template` renders what
// `kubectl kustomize` and `steward manifests --config` render.
const (
	tokNamespace      = "stewardhelmnamespace"
	tokName           = "stewardhelmfullname"
	tokLabels         = "stewardhelm-labels"
	tokPodLabels      = "stewardhelm-podlabels"
	tokSelector       = "stewardhelm-selector"
	tokPullSecrets    = "stewardhelm-imagepullsecrets"
	tokStartupProbe   = "stewardhelm-startupprobe"
	tokSpread         = "stewardhelm-topologyspreadconstraints"
	tokExtraArgs      = "stewardhelm-extraargs"
	tokRegOverrides   = "stewardhelm-registrationoverrides"
	tokExtraEnv       = "stewardhelm-extraenvvars"
	tokExtraVolumes   = "stewardhelm-extravolumes"
	tokExtraMounts    = "stewardhelm-extravolumemounts"
	tokAPIServerPorts = "stewardhelm-apiserverports"
	tokSMLabels       = "stewardhelm-servicemonitorlabels"
	tokSMInterval     = "stewardhelm-servicemonitorinterval"
	tokImage          = "stewardhelm-image"
	tokPullPolicy     = "stewardhelm-pullpolicy"
	tokReplicas       = "stewardhelm-replicas"
	tokResources      = "stewardhelm-resources"
	tokPriorityClass  = "stewardhelm-priorityclass"
	tokNodeSelector   = "stewardhelm-nodeselector"
	tokTolerations    = "stewardhelm-tolerations"
	tokAffinity       = "stewardhelm-affinity"
	tokPodAnnotations = "stewardhelm-podannotations"
	tokConfig         = "stewardhelm-config"
	tokMaxUnavailable = "stewardhelm-maxunavailable"
	tokShutdownDelay  = "stewardhelm-shutdowndelay"
	tokShutdownTime   = "stewardhelm-shutdowntimeout"
	tokGracePeriod    = "stewardhelm-graceperiod"
	tokListPrefix     = "stewardhelmlist-"
	tokLeftDelim      = "stewardhelm-leftdelim"
	tokAny            = "stewardhelm"
)

// chartList is a list setting of the configuration that the webhooks'
// matchConditions spell out as a CEL list literal: the chart writes the
// list from the values, so the identities an install exempts are the ones
// the API server keeps away from Steward.
type chartList struct {
	rule, key string
	// emptyMeansDefault: the rule's Default replaces an empty list, not
	// only a missing one.
	emptyMeansDefault bool
	// omitWhenEmpty: the rule leaves the clause holding the list out of
	// its expression when the list is empty.
	omitWhenEmpty bool
}

// chartLists are every list setting a matchCondition holds, as the rules'
// Specs declare them (rule.Charted), in the list's order.
// TestChartTemplatesEverySettingTheRegistrationReads fails when a setting
// changes the rendered registration and is neither here nor refused by the
// chart (chartRefused).
var chartLists = sync.OnceValue(func() []chartList {
	var out []chartList
	for _, p := range defaultParts() {
		for _, l := range p.chart.Lists {
			out = append(out, chartList{rule: p.name, key: l.Key, emptyMeansDefault: l.EmptyMeansDefault, omitWhenEmpty: l.OmitWhenEmpty})
		}
	}
	return out
})

// defaultRules are every rule of the list, as the default configuration
// builds them: built once, when rendering first needs them, never by a
// binary that only imports the package.
var defaultRules = sync.OnceValue(func() []rule.Rule {
	var rules []rule.Rule
	for _, c := range webhooks.Rules(config.Defaults(webhooks.Sections())) {
		rules = append(rules, c.Rule)
	}
	return rules
})

// defaultSpecs are the Specs of defaultRules.
var defaultSpecs = sync.OnceValue(func() []rule.Spec {
	var specs []rule.Spec
	for _, r := range defaultRules() {
		specs = append(specs, r.Spec())
	}
	return specs
})

// ruleParts are what a rule of defaultRules adds to the chart and to
// monitoring: its optional rule.Charted and rule.Monitored, zero when it
// has none.
type ruleParts struct {
	name       string
	chart      rule.Chart
	monitoring rule.Monitoring
}

// defaultParts are the parts of defaultRules, in the list's order.
var defaultParts = sync.OnceValue(func() []ruleParts {
	var out []ruleParts
	for _, r := range defaultRules() {
		p := ruleParts{name: r.Spec().Name}
		if c, ok := r.(rule.Charted); ok {
			p.chart = c.Chart()
		}
		if m, ok := r.(rule.Monitored); ok {
			p.monitoring = m.Monitoring()
		}
		out = append(out, p)
	}
	return out
})

func (l chartList) token() string { return tokListPrefix + l.rule + "-" + l.key }

func (l chartList) helper() string { return "steward.list." + l.rule + "." + l.key }

// chartRefused are the settings that change what is registered beyond
// matchConditions: the RBAC for recording Events, and the settings the
// rules' Specs declare (rule.Charted); rules turned off, which
// lose their webhook entries, RBAC and caches, are refused too. The chart
// refuses any value but the ones it renders, with a message pointing to
// `steward manifests --config`, rather than install a registration the
// server does not serve.
var chartRefused = sync.OnceValue(func() []chartRefusal {
	out := []chartRefusal{
		{path: "recordEventsFor", allowed: []string{string(config.EventsForServiceAccounts)}, why: "changes Steward's permission to record Events"},
		// A list reads as Go and Helm print it: "[a b]".
		{path: "audit.reportAPIs", allowed: []string{fmt.Sprint(config.ReportAPIValues())}, why: "changes Steward's permission to write reports"},
	}
	for _, p := range defaultParts() {
		for _, r := range p.chart.Refused {
			out = append(out, chartRefusal{path: "rules." + p.name + "." + r.Key, allowed: r.Allowed, installName: r.InstallName, why: r.Why})
		}
	}
	return out
})

// chartRefusal is a setting the chart refuses to change.
type chartRefusal struct {
	path string
	// allowed are the values the chart renders, besides leaving the
	// setting unset.
	allowed []string
	// installName: the chart renders the release's full name only, and
	// writes it into the configuration when the setting is unset.
	installName bool
	why         string
}

// installNames are the settings the chart sets to the release's full
// name.
func installNames() []chartRefusal {
	var out []chartRefusal
	for _, r := range chartRefused() {
		if r.installName {
			out = append(out, r)
		}
	}
	return out
}

// chartSettingPaths are the configuration paths the chart templates or
// refuses, for the test that checks nothing else changes the render.
func chartSettingPaths() []string {
	var paths []string
	for _, l := range chartLists() {
		paths = append(paths, "rules."+l.rule+"."+l.key)
	}
	for _, r := range chartRefused() {
		paths = append(paths, r.path)
	}
	for _, name := range sortedKeys(config.Defaults(webhooks.Sections()).Rules) {
		paths = append(paths, "rules."+name+".mode")
	}
	return paths
}

// RenderChart returns the Helm chart's files, keyed by their path under
// ChartDir. Options set the chart's default values: the image and the
// configuration; the namespace is the release's.
func RenderChart(o Options) (map[string][]byte, error) {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	cfg := config.Defaults(webhooks.Sections())
	if o.Config != nil {
		cfg = *o.Config
	}
	if err := chartRenders(cfg); err != nil {
		return nil, err
	}
	tokens, err := tokenConfig(cfg)
	if err != nil {
		return nil, err
	}
	in := install{ns: tokNamespace, image: tokImage, name: tokName}
	files := map[string][]byte{}
	base := in.baseObjects(tokens)
	delete(base, "base/namespace.yaml") // helm install --create-namespace
	overlay := in.overlayObjects()
	for path, objs := range base {
		name := strings.TrimPrefix(path, "base/")
		var cond string
		if name == "poddisruptionbudget.yaml" {
			cond = ".Values.podDisruptionBudget.enabled"
		}
		var docs []string
		for _, obj := range objs {
			d, err := in.chartVariants(obj, overlay)
			if err != nil {
				return nil, fmt.Errorf("chart %s: %w", name, err)
			}
			docs = append(docs, d)
		}
		if name == "deployment.yaml" {
			docs = append([]string{`{{- include "steward.validate" . }}` + "\n"}, docs...)
		}
		files["templates/"+name] = chartFile(cond, docs)
	}
	wrapped := []struct{ name, cond string }{
		{"cert-manager.yaml", `eq .Values.certificates.mode "cert-manager"`},
		{"self-managed-certs.yaml", `eq .Values.certificates.mode "self-managed"`},
	}
	overlayFiles := map[string][]any{
		"cert-manager.yaml":       overlay["overlays/cert-manager/certificates.yaml"],
		"self-managed-certs.yaml": append(append([]any{}, overlay["overlays/self-managed-certs/secret.yaml"]...), overlay["overlays/self-managed-certs/rbac.yaml"]...),
	}
	for _, w := range wrapped {
		docs, err := chartDocs(overlayFiles[w.name])
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", w.name, err)
		}
		files["templates/"+w.name] = chartFile(w.cond, docs)
	}
	monitoring := in.monitoringFiles()
	for _, m := range []struct{ path, value string }{
		{"monitoring/servicemonitor.yaml", "serviceMonitor"},
		{"monitoring/prometheusrule.yaml", "prometheusRule"},
		{"monitoring/dashboard.yaml", "dashboard"},
	} {
		docs, err := chartDocs(monitoring[m.path])
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", m.path, err)
		}
		files["templates/"+strings.TrimPrefix(m.path, "monitoring/")] = chartFile(".Values.monitoring."+m.value+".enabled", docs)
	}
	docs, err := chartDocs([]any{in.networkPolicy([]int32{0})})
	if err != nil {
		return nil, fmt.Errorf("chart networkpolicy.yaml: %w", err)
	}
	files["templates/networkpolicy.yaml"] = chartFile(".Values.networkPolicy.enabled", docs)
	var crds []string
	for _, crd := range [][]byte{policyReportsCRD, clusterPolicyReportsCRD} {
		doc := string(bytes.TrimPrefix(crd, []byte("---\n")))
		// The upstream files as they are, with the chart's labels.
		labelled := strings.Replace(doc, "\nmetadata:\n", "\nmetadata:\n  labels:\n    {{- include \"steward.labels\" $ | nindent 4 }}\n", 1)
		if labelled == doc || strings.Contains(doc, "\n  labels:") {
			return nil, fmt.Errorf("chart: the PolicyReport CRD's metadata is not where its labels go")
		}
		crds = append(crds, labelled)
	}
	files["templates/policyreport-crds.yaml"] = chartFile(".Values.policyReportCRDs.install", crds)
	for path, data := range files {
		if i := strings.Index(string(data), tokAny); i >= 0 {
			return nil, fmt.Errorf("chart %s: token left unreplaced near %q", path, excerpt(string(data), i))
		}
	}
	values, err := chartValues(in, o.Image, cfg)
	if err != nil {
		return nil, err
	}
	files["values.yaml"] = values
	files["Chart.yaml"] = chartMetadata(o.Image)
	if files["values.schema.json"], err = chartSchema(); err != nil {
		return nil, err
	}
	helpers, err := chartHelpers()
	if err != nil {
		return nil, err
	}
	files["templates/_helpers.tpl"] = helpers
	files[".helmignore"] = []byte(header + "*.orig\n*.tmp\n.git/\n")
	return files, nil
}

// chartRenders refuses, as the chart does, a default configuration the
// chart cannot render.
func chartRenders(cfg config.Config) error {
	for _, name := range sortedKeys(cfg.Rules) {
		if cfg.Rules[name].RuleMode() == rule.Off {
			return fmt.Errorf("chart: rules.%s.mode: off is not rendered by the chart; render the manifests instead", name)
		}
	}
	m, err := toMap(cfg)
	if err != nil {
		return err
	}
	for _, r := range chartRefused() {
		var v any = m
		for _, k := range strings.Split(r.path, ".") {
			sub, _ := v.(map[string]any)
			v = sub[k]
		}
		allowed := r.allowed
		if r.installName {
			allowed = []string{Name}
		}
		if v != nil && !slices.Contains(allowed, fmt.Sprint(v)) {
			return fmt.Errorf("chart: %s: %v %s, which the chart does not render; render the manifests instead", r.path, v, r.why)
		}
	}
	return nil
}

// tokenConfig is cfg with every chartList replaced by its token, so the
// CEL literal each list becomes can be found in the rendered expressions.
func tokenConfig(cfg config.Config) (config.Config, error) {
	m, err := toMap(cfg)
	if err != nil {
		return config.Config{}, err
	}
	for _, l := range chartLists() {
		rules, _ := m["rules"].(map[string]any)
		section, _ := rules[l.rule].(map[string]any)
		if section == nil {
			return config.Config{}, fmt.Errorf("chart: the configuration has no rules.%s", l.rule)
		}
		section[l.key] = []any{l.token()}
	}
	for _, r := range installNames() {
		setPath(m, r.path, tokName)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return config.Config{}, err
	}
	out, err := config.Decode(data, webhooks.Sections())
	if err != nil {
		return config.Config{}, fmt.Errorf("chart: %w", err)
	}
	return out, nil
}

// chartVariants renders one base object as a template: once when both
// certificate modes install it as it is, or once per mode when an overlay
// patches it (the Deployment's certificate mode, the webhook
// configurations' CA injection), with the overlay's own strategic merge
// patch, as kustomize applies it.
func (in install) chartVariants(obj any, overlay map[string][]any) (string, error) {
	base, err := toMap(obj)
	if err != nil {
		return "", err
	}
	certManager, err := patched(base, overlay["overlays/cert-manager/inject-ca.yaml"])
	if err != nil {
		return "", err
	}
	selfManaged, err := patched(base, overlay["overlays/self-managed-certs/deployment.yaml"])
	if err != nil {
		return "", err
	}
	cm, err := chartDoc(certManager)
	if err != nil {
		return "", err
	}
	sm, err := chartDoc(selfManaged)
	if err != nil {
		return "", err
	}
	if cm == sm {
		return cm, nil
	}
	return `{{- if eq .Values.certificates.mode "self-managed" }}` + "\n---\n" + sm +
		"{{- else }}\n---\n" + cm + "{{- end }}\n", nil
}

// patched applies the patches among patches that name obj's kind and name.
func patched(obj map[string]any, patches []any) (map[string]any, error) {
	out := obj
	for _, p := range patches {
		pm, err := toMap(p)
		if err != nil {
			return nil, err
		}
		if pm["kind"] != obj["kind"] || name(pm) != name(obj) {
			continue
		}
		var schema any
		switch obj["kind"] {
		case "Deployment":
			schema = appsv1.Deployment{}
		case "ValidatingWebhookConfiguration":
			schema = admissionregistrationv1.ValidatingWebhookConfiguration{}
		case "MutatingWebhookConfiguration":
			schema = admissionregistrationv1.MutatingWebhookConfiguration{}
		default:
			return nil, fmt.Errorf("no patch schema for %v", obj["kind"])
		}
		original, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		patch, err := json.Marshal(pm)
		if err != nil {
			return nil, err
		}
		merged, err := strategicpatch.StrategicMergePatch(original, patch, schema)
		if err != nil {
			return nil, fmt.Errorf("patching %v %s: %w", obj["kind"], name(obj), err)
		}
		out = map[string]any{}
		if err := json.Unmarshal(merged, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setPath sets the value at a dotted path of m, adding the maps on the
// way.
func setPath(m map[string]any, path string, v any) {
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

// deletePath deletes the value at a dotted path of m.
func deletePath(m map[string]any, path string) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = sub
	}
	delete(m, keys[len(keys)-1])
}

func name(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}

func chartDocs(objs []any) ([]string, error) {
	var docs []string
	for _, obj := range objs {
		m, err := toMap(obj)
		if err != nil {
			return nil, err
		}
		d, err := chartDoc(m)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// chartFile joins documents under the generated-file header, all of them
// rendered only when cond (a template expression) holds, if one is given.
func chartFile(cond string, docs []string) []byte {
	var b strings.Builder
	b.WriteString(header)
	if cond != "" {
		fmt.Fprintf(&b, "{{- if %s }}\n", cond)
	}
	for _, d := range docs {
		if !strings.HasPrefix(d, "{{") {
			b.WriteString("---\n")
		}
		b.WriteString(d)
	}
	if cond != "" {
		b.WriteString("{{- end }}\n")
	}
	return []byte(b.String())
}

// toMap turns a typed object into the plain map it is encoded from, less
// the empty fields typed objects always carry.
func toMap(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	clean(m)
	return m, nil
}

// chartDoc templates one object: the values the chart exposes are set to
// tokens, the object is encoded, and each token becomes the template
// expression that reads its value.
func chartDoc(obj map[string]any) (string, error) {
	// Strings that hold Go templates of their own (the alerts'
	// annotations) are written out by the chart as they are.
	obj = mapStrings(deepCopy(obj), func(s string) string { return strings.ReplaceAll(s, "{{", tokLeftDelim) }).(map[string]any)
	if err := templateLabels(obj); err != nil {
		return "", err
	}
	// The replacements of this object's own tokens.
	var extra []chartReplacement
	switch obj["kind"] {
	case "Deployment":
		spec := obj["spec"].(map[string]any)
		spec["replicas"] = tokReplicas
		spec["selector"].(map[string]any)["matchLabels"] = tokSelector
		tmpl := spec["template"].(map[string]any)
		tmpl["metadata"].(map[string]any)["annotations"] = tokPodAnnotations
		tmpl["metadata"].(map[string]any)["labels"] = map[string]any{tokPodLabels: tokPodLabels}
		pod := tmpl["spec"].(map[string]any)
		pod["priorityClassName"] = tokPriorityClass
		pod["nodeSelector"] = tokNodeSelector
		pod["tolerations"] = tokTolerations
		pod["affinity"] = tokAffinity
		pod["terminationGracePeriodSeconds"] = tokGracePeriod
		pod["imagePullSecrets"] = tokPullSecrets
		// The constraints are a value (whose default is the objects'),
		// each given the pods' selector unless it has a labelSelector.
		pod["topologySpreadConstraints"] = tokSpread
		pod["volumes"] = append(pod["volumes"].([]any), tokExtraVolumes)
		for _, c := range pod["containers"].([]any) {
			c := c.(map[string]any)
			if c["name"] != Name {
				continue
			}
			c["imagePullPolicy"] = tokPullPolicy
			c["resources"] = tokResources
			for i, a := range c["args"].([]any) {
				switch a {
				case "--shutdown-delay=" + shutdownDelay:
					c["args"].([]any)[i] = "--shutdown-delay=" + tokShutdownDelay
				case "--shutdown-timeout=" + shutdownTimeout:
					c["args"].([]any)[i] = "--shutdown-timeout=" + tokShutdownTime
				}
			}
			c["startupProbe"] = tokStartupProbe
			// Steward keeps its registration with what the webhooks value
			// changed in it, so it never undoes the install's choices.
			c["args"] = append(c["args"].([]any), tokRegOverrides, tokExtraArgs)
			c["env"] = append(c["env"].([]any), tokExtraEnv)
			c["volumeMounts"] = append(c["volumeMounts"].([]any), tokExtraMounts)
		}
	case "Service":
		obj["spec"].(map[string]any)["selector"] = tokSelector
	case "ServiceMonitor":
		spec := obj["spec"].(map[string]any)
		spec["selector"].(map[string]any)["matchLabels"] = tokSelector
		labels := obj["metadata"].(map[string]any)["labels"].(map[string]any)
		delete(labels, tokLabels)
		labels[tokSMLabels] = tokSMLabels
		for _, e := range spec["endpoints"].([]any) {
			e.(map[string]any)["interval"] = tokSMInterval
		}
	case "NetworkPolicy":
		spec := obj["spec"].(map[string]any)
		spec["podSelector"].(map[string]any)["matchLabels"] = tokSelector
		spec["egress"].([]any)[0].(map[string]any)["ports"] = tokAPIServerPorts
	case "ConfigMap":
		if name(obj) == tokName+"-config" {
			obj["data"].(map[string]any)["config.yaml"] = tokConfig
		}
	case "PodDisruptionBudget":
		spec := obj["spec"].(map[string]any)
		spec["maxUnavailable"] = tokMaxUnavailable
		spec["selector"].(map[string]any)["matchLabels"] = tokSelector
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		whs, _ := obj["webhooks"].([]any)
		for i, wh := range whs {
			wh := wh.(map[string]any)
			conds, _ := wh["matchConditions"].([]any)
			for _, c := range conds {
				c := c.(map[string]any)
				expr, err := templateExpression(c["expression"].(string))
				if err != nil {
					return "", fmt.Errorf("webhook %v: %w", wh["name"], err)
				}
				c["expression"] = expr
			}
			r, err := templateWebhook(obj, wh, i)
			if err != nil {
				return "", fmt.Errorf("webhook %v: %w", wh["name"], err)
			}
			extra = append(extra, r...)
		}
	}
	var node yaml.Node
	if err := node.Encode(obj); err != nil {
		return "", err
	}
	blockStrings(&node)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	doc, err := replaceTokens(b.String(), extra)
	return strings.ReplaceAll(doc, tokLeftDelim, `{{ "{{" }}`), err
}

// templateWebhook makes the settings of the webhook entry wh, the i-th of
// the configuration obj, follow the chart's webhooks value for its name:
// failurePolicy and timeoutSeconds replace the entry's, and the
// matchExpressions of namespaceSelector and objectSelector are added to
// the entry's. The annotation saying why the entry fails open or closed
// says so when the failure policy is the install's.
func templateWebhook(obj, wh map[string]any, i int) ([]chartReplacement, error) {
	name, _ := wh["name"].(string)
	tok := func(what string) string { return fmt.Sprintf("stewardhelmwebhook%d-%s", i, what) }
	// value reads the webhook's setting at keys, def when unset. The
	// webhook's name, dots and all, is one key.
	value := func(def string, keys ...string) string {
		q := []string{fmt.Sprintf("%q", name)}
		for _, k := range keys {
			q = append(q, fmt.Sprintf("%q", k))
		}
		return fmt.Sprintf("dig %s %s ($.Values.webhooks | default dict)", strings.Join(q, " "), def)
	}
	policy, _ := wh["failurePolicy"].(string)
	if policy == "" {
		return nil, errors.New("no failurePolicy")
	}
	var out []chartReplacement
	wh["failurePolicy"] = tok("failurepolicy")
	out = append(out, chartReplacement{token: tok("failurepolicy"), expr: value(fmt.Sprintf("%q", policy), "failurePolicy"), kind: scalar})
	timeout := fmt.Sprint(wh["timeoutSeconds"])
	wh["timeoutSeconds"] = tok("timeoutseconds")
	out = append(out, chartReplacement{token: tok("timeoutseconds"), expr: value(timeout, "timeoutSeconds"), kind: scalar})

	ns, _ := wh["namespaceSelector"].(map[string]any)
	exprs, _ := ns["matchExpressions"].([]any)
	if len(exprs) == 0 {
		return nil, errors.New("its namespaceSelector excludes no namespace")
	}
	ns["matchExpressions"] = append(exprs, tok("namespaceselector"))
	out = append(out, chartReplacement{token: tok("namespaceselector"), expr: value("list", "namespaceSelector", "matchExpressions"), kind: listItems})

	sel, _ := wh["objectSelector"].(map[string]any)
	selJSON, err := json.Marshal(sel)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		selJSON = []byte("{}")
	}
	wh["objectSelector"] = tok("objectselector")
	out = append(out, chartReplacement{token: tok("objectselector"), expr: fmt.Sprintf(`include "steward.webhookObjectSelector" (list $ %q %q)`, name, selJSON), kind: yamlBlock})

	meta := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	key := failurePolicyAnnotation + name
	note, _ := annotations[key].(string)
	reason, ok := strings.CutPrefix(note, policy+": ")
	if !ok || strings.Contains(reason, tokLeftDelim) {
		return nil, fmt.Errorf("its annotation %s does not give the reason for %s: %q", key, policy, note)
	}
	annotations[key] = tok("failurepolicynote")
	out = append(out, chartReplacement{token: tok("failurepolicynote"), expr: fmt.Sprintf(`include "steward.failurePolicyNote" (list $ %q %q %q)`, name, policy, reason), kind: scalar})
	return out, nil
}

// templateLabels replaces the labels every object carries with the
// chart's: the standard labels of a Helm chart (helm.sh/chart and
// app.kubernetes.io/name, instance, version, managed-by and part-of). An
// object's other labels stay.
func templateLabels(obj map[string]any) error {
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels[nameLabel] != Name || labels[partOfLabel] != Name {
		return fmt.Errorf("%v %s does not carry Steward's labels: %v", obj["kind"], name(obj), labels)
	}
	delete(labels, nameLabel)
	delete(labels, partOfLabel)
	delete(labels, instanceLabel)
	labels[tokLabels] = tokLabels
	return nil
}

// mapStrings returns v with f applied to every string in it.
func mapStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case map[string]any:
		for k, e := range t {
			t[k] = mapStrings(e, f)
		}
	case []any:
		for i, e := range t {
			t[i] = mapStrings(e, f)
		}
	}
	return v
}

// blockStrings writes every string holding a template action or a line
// break as a literal block, where what a template writes needs no
// escaping.
func blockStrings(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && (strings.Contains(n.Value, "{{") || strings.Contains(n.Value, tokLeftDelim) || strings.Contains(n.Value, "\n")) {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		blockStrings(c)
	}
}

var celListLiteral = regexp.MustCompile(`\["` + tokListPrefix + `[^"]+"(?:, "` + tokListPrefix + `[^"]+")*\]`)

// templateExpression writes the CEL list literals of chartLists from the
// values, and leaves out the clauses a rule omits for an empty list. Each
// such clause is a line of its own, joined to the next by &&: wrapped in
// {{ if }} ... {{ end }} at the start of the next line, an omitted clause
// takes its line break with it.
func templateExpression(expr string) (string, error) {
	lines := strings.Split(expr, "\n")
	for _, l := range chartLists() {
		if !l.omitWhenEmpty {
			continue
		}
		lit := `["` + l.token() + `"]`
		for i, line := range lines {
			if !strings.Contains(line, lit) {
				continue
			}
			if i == len(lines)-1 || !strings.HasSuffix(line, " &&") {
				return "", fmt.Errorf("the clause holding rules.%s.%s is not a line joined to the next with &&", l.rule, l.key)
			}
			// A clause after another omittable one starts with the
			// other's {{ end }}.
			closed, rest := "", line
			if strings.HasPrefix(line, "{{ end }}") {
				closed, rest = "{{ end }}", strings.TrimPrefix(line, "{{ end }}")
			}
			lines[i] = closed + fmt.Sprintf(`{{ if include %q $ | fromJsonArray }}`, l.helper()) + rest
			lines[i+1] = "{{ end }}" + lines[i+1]
		}
	}
	expr = strings.Join(lines, "\n")
	var err error
	expr = celListLiteral.ReplaceAllStringFunc(expr, func(lit string) string {
		var args []string
		for _, tok := range strings.Split(strings.Trim(lit, "[]"), ", ") {
			tok = strings.Trim(tok, `"`)
			found := false
			for _, l := range chartLists() {
				if l.token() == tok {
					args = append(args, fmt.Sprintf("(include %q $ | fromJsonArray)", l.helper()))
					found = true
				}
			}
			if !found {
				err = fmt.Errorf("unknown list token %s", tok)
			}
		}
		return fmt.Sprintf(`{{ include "steward.celList" (concat %s) }}`, strings.Join(args, " "))
	})
	return expr, err
}

// chartReplacement is how a token becomes template text.
type chartReplacement struct {
	token string
	// expr is the template expression of the value.
	expr string
	kind replacementKind
	// when is the value an optionalYamlBlock is left out without.
	when string
}

type replacementKind int

const (
	// scalar: the token is the value; written as JSON, valid YAML.
	scalar replacementKind = iota
	// text: the token is part of a string; expr's output is written as is.
	text
	// optionalScalar: the key is left out when the value is empty.
	optionalScalar
	// block: a mapping or list, written as YAML under the key.
	block
	// optionalBlock: a block left out when empty.
	optionalBlock
	// blockScalar: the value, as YAML, is the content of a literal string.
	blockScalar
	// yamlBlock: expr writes YAML, the value of the key.
	yamlBlock
	// textBlock: expr writes the content of a literal string.
	textBlock
	// entries: the token is a key and its value in a mapping; expr writes
	// YAML, the entries that take the token's place.
	entries
	// listItems: the token is an item of a list; the items of the list
	// expr is take its place.
	listItems
	// optionalYamlBlock: expr writes YAML, the value of the key, which is
	// left out when the value named by when is empty.
	optionalYamlBlock
)

var chartReplacements = []chartReplacement{
	{token: tokNamespace, expr: `include "steward.namespace" $`, kind: text},
	{token: tokName, expr: `include "steward.fullname" $`, kind: text},
	{token: tokLabels, expr: `include "steward.labels" $`, kind: entries},
	{token: tokPodLabels, expr: `include "steward.podLabels" $`, kind: entries},
	{token: tokSelector, expr: `include "steward.selectorLabels" $`, kind: yamlBlock},
	{token: tokImage, expr: `include "steward.image" $`, kind: scalar},
	{token: tokReplicas, expr: `.Values.replicas`, kind: scalar},
	{token: tokMaxUnavailable, expr: `.Values.podDisruptionBudget.maxUnavailable`, kind: scalar},
	{token: tokShutdownDelay, expr: `.Values.shutdown.delay`, kind: text},
	{token: tokShutdownTime, expr: `.Values.shutdown.timeout`, kind: text},
	{token: tokGracePeriod, expr: `.Values.shutdown.terminationGracePeriodSeconds`, kind: scalar},
	{token: tokPullPolicy, expr: `.Values.image.pullPolicy`, kind: optionalScalar},
	{token: tokPriorityClass, expr: `.Values.priorityClassName`, kind: optionalScalar},
	{token: tokResources, expr: `.Values.resources`, kind: block},
	{token: tokNodeSelector, expr: `.Values.nodeSelector`, kind: optionalBlock},
	{token: tokTolerations, expr: `.Values.tolerations`, kind: optionalBlock},
	{token: tokAffinity, expr: `.Values.affinity`, kind: optionalBlock},
	{token: tokPodAnnotations, expr: `.Values.podAnnotations`, kind: optionalBlock},
	{token: tokPullSecrets, expr: `.Values.imagePullSecrets`, kind: optionalBlock},
	{token: tokStartupProbe, expr: `.Values.startupProbe`, kind: optionalBlock},
	{token: tokSpread, expr: `include "steward.topologySpreadConstraints" $`, kind: optionalYamlBlock, when: `.Values.topologySpreadConstraints`},
	{token: tokExtraArgs, expr: `.Values.extraArgs`, kind: listItems},
	// Only where the webhooks value sets anything: the chart's defaults
	// render what the kustomize base does.
	{token: tokRegOverrides, expr: `ternary (list (printf "--registration-overrides=%s" (toJson .Values.webhooks))) (list) (not (empty .Values.webhooks))`, kind: listItems},
	{token: tokExtraEnv, expr: `.Values.extraEnvVars`, kind: listItems},
	{token: tokExtraVolumes, expr: `.Values.extraVolumes`, kind: listItems},
	{token: tokExtraMounts, expr: `.Values.extraVolumeMounts`, kind: listItems},
	{token: tokConfig, expr: `include "steward.config" $`, kind: textBlock},
	{token: tokAPIServerPorts, expr: `include "steward.apiServerPorts" $`, kind: yamlBlock},
	{token: tokSMLabels, expr: `include "steward.serviceMonitorLabels" $`, kind: entries},
	{token: tokSMInterval, expr: `.Values.monitoring.serviceMonitor.interval`, kind: scalar},
}

func replaceTokens(doc string, extra []chartReplacement) (string, error) {
	for _, r := range append(slices.Clone(chartReplacements), extra...) {
		if !strings.Contains(doc, r.token) {
			continue
		}
		if r.kind == text {
			doc = strings.ReplaceAll(doc, r.token, "{{ "+r.expr+" }}")
			continue
		}
		// The first key of a list's item follows "- ", which counts as
		// indentation.
		line := regexp.MustCompile(`(?m)^( *(?:- )?)([A-Za-z0-9_./-]+): ` + regexp.QuoteMeta(r.token) + `$`)
		switch r.kind {
		case entries:
			line = regexp.MustCompile(`(?m)^( *)(` + regexp.QuoteMeta(r.token) + `): ` + regexp.QuoteMeta(r.token) + `$`)
		case listItems:
			line = regexp.MustCompile(`(?m)^( *)- (` + regexp.QuoteMeta(r.token) + `)$`)
		}
		if !line.MatchString(doc) {
			return "", fmt.Errorf("token %s is not the whole value of a key", r.token)
		}
		var err error
		doc = line.ReplaceAllStringFunc(doc, func(l string) string {
			m := line.FindStringSubmatch(l)
			indent, key := m[1], m[2]
			inner := len(indent) + 2
			if strings.HasSuffix(indent, "- ") && r.kind != scalar && r.kind != block && r.kind != yamlBlock && r.kind != textBlock {
				err = fmt.Errorf("token %s is the first key of a list's item, which only a single line can replace", r.token)
			}
			switch r.kind {
			case scalar:
				return fmt.Sprintf("%s%s: {{ %s | toJson }}", indent, key, r.expr)
			case optionalScalar:
				return fmt.Sprintf("%[1]s{{- with %[3]s }}\n%[1]s%[2]s: {{ toJson . }}\n%[1]s{{- end }}", indent, key, r.expr)
			case block:
				return fmt.Sprintf("%s%s: {{- toYaml %s | nindent %d }}", indent, key, r.expr, inner)
			case optionalBlock:
				return fmt.Sprintf("%[1]s{{- with %[3]s }}\n%[1]s%[2]s: {{- toYaml . | nindent %[4]d }}\n%[1]s{{- end }}", indent, key, r.expr, inner)
			case blockScalar:
				return fmt.Sprintf("%s%s: |{{- toYaml %s | nindent %d }}", indent, key, r.expr, inner)
			case yamlBlock:
				return fmt.Sprintf("%s%s: {{- %s | nindent %d }}", indent, key, r.expr, inner)
			case textBlock:
				return fmt.Sprintf("%s%s: |{{- %s | nindent %d }}", indent, key, r.expr, inner)
			case entries:
				return fmt.Sprintf("%s{{- %s | nindent %d }}", indent, r.expr, len(indent))
			case listItems:
				return fmt.Sprintf("%[1]s{{- with %[2]s }}\n%[1]s{{- toYaml . | nindent %[3]d }}\n%[1]s{{- end }}", indent, r.expr, len(indent))
			case optionalYamlBlock:
				return fmt.Sprintf("%[1]s{{- with %[4]s }}\n%[1]s%[2]s: {{- %[3]s | nindent %[5]d }}\n%[1]s{{- end }}", indent, key, r.expr, r.when, inner)
			}
			return l
		})
		if err != nil {
			return "", err
		}
	}
	return doc, nil
}

func deepCopy(m map[string]any) map[string]any {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err) // a decoded JSON map always marshals
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func excerpt(s string, i int) string {
	start, end := max(0, i-60), min(len(s), i+60)
	return s[start:end]
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
