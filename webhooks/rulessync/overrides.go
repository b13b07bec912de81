package rulessync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Override is what an installer changed in one entry of the registration
// (the Helm chart's webhooks value): the failure policy and timeout
// replace the entry's, the match expressions are added to its selectors.
// Steward keeps the registration with them, so it never undoes what the
// install decided.
type Override struct {
	FailurePolicy     *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	TimeoutSeconds    *int32                                     `json:"timeoutSeconds,omitempty"`
	NamespaceSelector *SelectorOverride                          `json:"namespaceSelector,omitempty"`
	ObjectSelector    *SelectorOverride                          `json:"objectSelector,omitempty"`
}

// SelectorOverride are match expressions added to an entry's selector.
type SelectorOverride struct {
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ParseOverrides reads overrides by entry name from JSON (steward serve
// --registration-overrides); entries names the entries that exist. An
// error names the entry and field at fault.
func ParseOverrides(data string, entries []string) (map[string]Override, error) {
	out := map[string]Override{}
	if data == "" {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("not a JSON object of webhook entries' failurePolicy, timeoutSeconds, namespaceSelector and objectSelector: %w", err)
	}
	for name, o := range out {
		if !slices.Contains(entries, name) {
			return nil, fmt.Errorf("%s: Steward has no webhook entry of that name", name)
		}
		if p := o.FailurePolicy; p != nil && *p != admissionregistrationv1.Fail && *p != admissionregistrationv1.Ignore {
			return nil, fmt.Errorf("%s.failurePolicy: %q is not Fail or Ignore", name, *p)
		}
		if t := o.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
			return nil, fmt.Errorf("%s.timeoutSeconds: %d is not between 1 and 30", name, *t)
		}
		for field, sel := range map[string]*SelectorOverride{"namespaceSelector": o.NamespaceSelector, "objectSelector": o.ObjectSelector} {
			if sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: sel.MatchExpressions}); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", name, field, err)
			}
		}
	}
	return out, nil
}

// apply changes a rendered entry's fields as the override says.
func (o Override) apply(policy **admissionregistrationv1.FailurePolicyType, timeout **int32, ns, obj **metav1.LabelSelector) {
	if o.FailurePolicy != nil {
		p := *o.FailurePolicy
		*policy = &p
	}
	if o.TimeoutSeconds != nil {
		t := *o.TimeoutSeconds
		*timeout = &t
	}
	for _, s := range []struct {
		sel **metav1.LabelSelector
		add *SelectorOverride
	}{{ns, o.NamespaceSelector}, {obj, o.ObjectSelector}} {
		if s.add == nil || len(s.add.MatchExpressions) == 0 {
			continue
		}
		if *s.sel == nil {
			*s.sel = &metav1.LabelSelector{}
		}
		(*s.sel).MatchExpressions = append((*s.sel).MatchExpressions, s.add.MatchExpressions...)
	}
}
