package webhooks

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/config"

	"github.com/stewardhq/steward/webhooks/rule"
)

// TestWebhookNamesAndPathsComeFromTheRuleName proves every entry is named
// and served as rule.WebhookName and rule.Path derive it from the rule's
// name, type and one suffix, so names and paths cannot drift apart: the
// API server's configurations, metrics labels and denial messages rely on
// them.
func TestWebhookNamesAndPathsComeFromTheRuleName(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Rules(config.Defaults(Sections())) {
		spec := c.Rule.Spec()
		for _, wh := range spec.Webhooks {
			suffix := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(wh.Name, spec.Name), ".steward.dev"), "-")
			if rule.WebhookName(spec.Name, suffix) != wh.Name || rule.Path(spec.Type, spec.Name, suffix) != wh.Path {
				t.Errorf("rule %s: entry %s at %s, want rule.WebhookName and rule.Path of one suffix (for %q: %s at %s)",
					spec.Name, wh.Name, wh.Path, suffix, rule.WebhookName(spec.Name, suffix), rule.Path(spec.Type, spec.Name, suffix))
			}
			if seen[wh.Name] || seen[wh.Path] {
				t.Errorf("rule %s: entry %s or path %s is registered twice", spec.Name, wh.Name, wh.Path)
			}
			seen[wh.Name], seen[wh.Path] = true, true
		}
	}
}
