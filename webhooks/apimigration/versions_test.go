package apimigration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewestReleaseIs210(t *testing.T) {
	if got := NewestRelease(); got != flux210 {
		t.Errorf("NewestRelease() = %s, want 2.10", got)
	}
}

func TestKnowsCurrentAndDeprecatedVersionsOnly(t *testing.T) {
	k := LookupKind(KustomizeGroup, "Kustomization")
	got := map[string]bool{}
	for _, v := range []string{"v1", "v1beta1", "v1beta2", "v1beta3", "v2", ""} {
		got[v] = k.Knows(v)
	}
	want := map[string]bool{"v1": true, "v1beta1": true, "v1beta2": true, "v1beta3": false, "v2": false, "": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Knows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v1", "v1beta1", "v1beta2"}, k.Versions()); diff != "" {
		t.Errorf("Versions (-want +got):\n%s", diff)
	}
}
