package webhooks

import (
	"github.com/stewardhq/steward/webhooks/audit"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Auditors are the rules among rules that can audit, are on (their mode
// is not off) and are not disabled in c, in the list's order: what the
// background audit asks.
func Auditors(c config.AuditConfig, rules []Configured) []audit.Auditor {
	var out []audit.Auditor
	for _, r := range rules {
		a, ok := r.Rule.(rule.Auditor)
		if !ok || r.Rule == nil || r.Mode == rule.Off || c.Disabled(r.Name) {
			continue
		}
		out = append(out, audit.Auditor{Name: r.Name, Auditor: a})
	}
	return out
}
