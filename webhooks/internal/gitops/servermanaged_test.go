package gitops

import "testing"

func TestServerManagedPointersParse(t *testing.T) {
	// MustPointers panics at package initialisation otherwise; this names
	// the list in a failure.
	if len(serverManaged) == 0 {
		t.Fatal("serverManaged is empty")
	}
}
