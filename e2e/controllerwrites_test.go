package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stewardhq/steward/e2e/harness"
)

// wantWritesAllowed reads from e's audit log the writes (every verb but
// get, list and watch) that match selects, the writes of a real
// controller, and fails t for each that Steward refused and for each of
// want ("<verb> <resource> <name> by <user>") that is not among those that
// succeeded. Another failure refuses nothing: a conflict or a NotFound is
// the controller acting on an object another write had moved on, and it
// acts again. It logs how many times who wrote and how many of those
// writes Steward refused, the count each real-controller scenario reports.
func wantWritesAllowed(t *testing.T, e *harness.Env, who string, match func(harness.AuditEvent) bool, want []string) {
	t.Helper()
	events, err := e.AuditEvents(func(ev harness.AuditEvent) bool {
		return ev.ObjectRef != nil && ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch" && match(ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	done, refused := map[string]bool{}, 0
	for _, ev := range events {
		what := fmt.Sprintf("%s %s %s by %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.User.Username)
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
			if strings.Contains(ev.ResponseStatus.Message, "admission webhook") {
				refused++
				t.Errorf("Steward refused %s: %s", what, ev.ResponseStatus.Message)
			} else {
				t.Logf("%s was answered %d: %s", what, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
			}
			continue
		}
		done[what] = true
	}
	for _, w := range want {
		if !done[w] {
			t.Errorf("the audit log has no successful %q; the writes of %s: %v", w, who, done)
		}
	}
	t.Logf("%s wrote %d times (%d distinct writes); Steward refused %d", who, len(events), len(done), refused)
}
