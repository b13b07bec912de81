package apimigration

// The annotations the rule writes. Steward's own keys carry its prefix;
// requestedAt is Flux's, and setting it is how anyone asks a Flux
// controller to reconcile now.
const (
	// MigratedFromAnnotation records the deprecated group/version the
	// object was last written through.
	MigratedFromAnnotation = "steward.dev/migrated-from"
	// MigratedAtAnnotation records when Steward first saw that write (or
	// last saw it together with a spec change), as RFC 3339.
	MigratedAtAnnotation = "steward.dev/migrated-at"
	// RequestedAtAnnotation is Flux's reconcile request annotation.
	RequestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
)

// plan returns the annotations a write through the deprecated group/version
// from must carry, limited to those whose value has to change. old is nil
// on CREATE. now is the timestamp for a fresh mark.
//
// A fresh mark (migrated-from, migrated-at and a new requestedAt) is made
// the first time an object is written through this deprecated version, and
// whenever such a write changes the spec. A write that changes nothing the
// controller reconciles keeps the stored mark and the stored requestedAt,
// restoring them if the write dropped them (a replace, or an apply whose
// field manager owns them), so a GitOps tool re-applying the same manifest
// every interval never starts a reconcile and the stored object stays
// stable. The plan is a fixed point: applied to its own result it asks for
// nothing, which is what reinvocationPolicy IfNeeded needs.
//
// n and o are the new and the stored object's annotations (o is nil and
// update false on CREATE); sameSpec compares their specs, only when the
// plan needs to know.
func plan(from string, n, o map[string]string, update bool, sameSpec func() bool, now string) map[string]string {
	want := map[string]string{MigratedFromAnnotation: from}
	if update && o[MigratedFromAnnotation] == from && sameSpec() {
		if at, ok := o[MigratedAtAnnotation]; ok {
			want[MigratedAtAnnotation] = at
		}
		if _, ok := n[RequestedAtAnnotation]; !ok {
			if at, ok := o[RequestedAtAnnotation]; ok {
				want[RequestedAtAnnotation] = at
			}
		}
	} else {
		// A requestedAt that differs from the stored one already asks for
		// a reconcile: the client's own request (never overwritten), or
		// this rule's on reinvocation.
		if at := n[RequestedAtAnnotation]; at == "" || at == o[RequestedAtAnnotation] {
			want[RequestedAtAnnotation] = now
		}
		// Likewise a mark for this version that is not the stored one is
		// already fresh.
		if !(n[MigratedFromAnnotation] == from && n[MigratedAtAnnotation] != "" && n[MigratedAtAnnotation] != o[MigratedAtAnnotation]) {
			want[MigratedAtAnnotation] = now
		}
	}
	for k, v := range want {
		if cur, ok := n[k]; ok && cur == v {
			delete(want, k)
		}
	}
	return want
}
