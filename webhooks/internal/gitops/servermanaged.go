package gitops

import (
	"fmt"

	"github.com/stewardhq/steward/webhooks/object"
)

// serverManaged are the paths an UPDATE may change without being a manual
// edit of the desired state: bookkeeping the API server, controllers or
// client tools maintain. Fleet's own drift detection ignores them as well.
var serverManaged = MustPointers(
	"/metadata/managedFields",
	"/metadata/resourceVersion",
	"/metadata/generation",
	"/metadata/uid",
	"/metadata/selfLink",
	"/metadata/creationTimestamp",
	"/metadata/deletionTimestamp",
	"/metadata/deletionGracePeriodSeconds",
	// Finalizers and owner references are how cleanup and garbage
	// collection work; an operator clearing a stuck finalizer must succeed.
	// (Adding an owner reference is refused on its own: see AddedOwners.)
	"/metadata/finalizers",
	"/metadata/ownerReferences",
	// Observed state, written by controllers.
	"/status",
	// kubectl apply's bookkeeping: it records the last applied manifest and
	// changes nothing the object does; any real change sent along with it is
	// still reported.
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
)

// MustPointers parses built-in pointers; a bad one is a programming
// error.
func MustPointers(ss ...string) []object.Pointer {
	ps := make([]object.Pointer, len(ss))
	for i, s := range ss {
		p, err := object.ParsePointer(s)
		if err != nil {
			panic(fmt.Sprintf("invalid built-in pointer %q: %v", s, err))
		}
		ps[i] = p
	}
	return ps
}
