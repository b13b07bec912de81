package fluxguard

import (
	"regexp"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// ignoreRule is one of an owner's drift ignore rules (a Kustomization's
// spec.ignore, Flux 2.9 on; a HelmRelease's spec.driftDetection.ignore):
// JSON pointers the tool does not correct, on the objects its target
// selects, or on all of them.
type ignoreRule struct {
	paths  []object.Pointer
	target *target
}

// target is a kustomize selector: each set field must match, the strings
// as anchored regular expressions, as kustomize matches them.
type target struct {
	group, version, kind, name, namespace *regexp.Regexp
	labels, annotations                   labels.Selector
}

// ignoreRules reads the rules as the API server stores them. A rule that
// does not parse is left out: the owner's tool refuses it too, so it
// ignores nothing.
func ignoreRules(list []any) []ignoreRule {
	var out []ignoreRule
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		r := ignoreRule{paths: gitops.IgnorePaths(m["paths"])}
		if t, ok := m["target"].(map[string]any); ok {
			var valid bool
			if r.target, valid = targetOf(t); !valid {
				continue
			}
		}
		if len(r.paths) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func targetOf(m map[string]any) (*target, bool) {
	t := &target{}
	for key, re := range map[string]**regexp.Regexp{"group": &t.group, "version": &t.version, "kind": &t.kind, "name": &t.name, "namespace": &t.namespace} {
		s, _ := m[key].(string)
		if s == "" {
			continue
		}
		compiled, err := regexp.Compile("^(?:" + s + ")$")
		if err != nil {
			return nil, false
		}
		*re = compiled
	}
	for key, sel := range map[string]*labels.Selector{"labelSelector": &t.labels, "annotationSelector": &t.annotations} {
		s, _ := m[key].(string)
		if s == "" {
			continue
		}
		parsed, err := labels.Parse(s)
		if err != nil {
			return nil, false
		}
		*sel = parsed
	}
	return t, true
}

// skipFor returns the paths the rules ignore on the object ref names,
// whose metadata v holds.
func skipFor(rules []ignoreRule, ref gitops.Ref, v *object.View) []object.Pointer {
	var out []object.Pointer
	for _, r := range rules {
		if r.target == nil || r.target.matches(ref, v) {
			out = append(out, r.paths...)
		}
	}
	return out
}

func (t *target) matches(ref gitops.Ref, v *object.View) bool {
	for _, c := range []struct {
		re *regexp.Regexp
		s  string
	}{{t.group, ref.Group}, {t.version, ref.Version}, {t.kind, ref.Kind}, {t.name, ref.Name}, {t.namespace, ref.Namespace}} {
		if c.re != nil && !c.re.MatchString(c.s) {
			return false
		}
	}
	if t.labels != nil && !t.labels.Matches(labels.Set(v.Labels())) {
		return false
	}
	return t.annotations == nil || t.annotations.Matches(labels.Set(v.Annotations()))
}
