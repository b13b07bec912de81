package audit

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Auditor is one rule the audit asks: its name (the reports' policy) and
// the rule.
type Auditor struct {
	Name string
	rule.Auditor
}

// Answer is one rule's answer to one pass.
type Answer struct {
	Rule     string
	Findings []rule.Finding
	// Err is why the rule could not answer (its caches are not synced);
	// Findings is then empty.
	Err      error
	Duration time.Duration
}

// Pass is every rule's answer to one pass, in the order asked.
type Pass []Answer

// Collect asks each auditor once. api is the uncached reader the rules
// may use for a few named reads.
func Collect(ctx context.Context, auditors []Auditor, api client.Reader) Pass {
	out := make(Pass, 0, len(auditors))
	for _, a := range auditors {
		start := time.Now()
		findings, err := a.Audit(ctx, api)
		if err != nil {
			findings = nil
		}
		out = append(out, Answer{Rule: a.Name, Findings: findings, Err: err, Duration: time.Since(start)})
	}
	return out
}

// Answered are the findings of the rules that answered, by rule name.
func (p Pass) Answered() map[string][]rule.Finding {
	out := map[string][]rule.Finding{}
	for _, a := range p {
		if a.Err == nil {
			out[a.Rule] = a.Findings
		}
	}
	return out
}

// Failed names the rules that could not answer.
func (p Pass) Failed() []string {
	var out []string
	for _, a := range p {
		if a.Err != nil {
			out = append(out, a.Rule)
		}
	}
	return out
}
