package gitops

import "testing"

func TestServerManagedPointersParse(t *testing.T) {
	// MustPointers panics at package initialisation otherwise; this names
	// the list in a failure.
	if len(ServerManaged) == 0 {
		t.Fatal("ServerManaged is empty")
	}
}
