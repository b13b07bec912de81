package audit

import (
	"context"
	"fmt"
	"testing"

	"github.com/stewardhq/steward/webhooks/rule"
)

// BenchmarkPublishUnchanged is a pass over 10,000 findings in 100
// namespaces whose reports are already current: what every pass of a
// steady cluster costs Steward (building, comparing; no writes).
func BenchmarkPublishUnchanged(b *testing.B) {
	var findings []rule.Finding
	for i := range 10_000 {
		findings = append(findings, finding("suspended", rule.AuditWarn, fmt.Sprintf("ns-%02d", i%100), fmt.Sprintf("obj-%05d", i)))
	}
	answered := map[string][]rule.Finding{"suspendnotice": findings}
	p, _ := newFakePublisher()
	if _, err := p.Publish(context.Background(), answered, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		done, err := p.Publish(context.Background(), answered, nil)
		if err != nil || done.Unchanged != 100 {
			b.Fatalf("%+v, %v", done, err)
		}
	}
}
