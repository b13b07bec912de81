package apimigration

import (
	jsonpatch "gomodules.xyz/jsonpatch/v2"

	"github.com/stewardhq/steward/webhooks/internal/annotationpatch"
)

// annotations writes the rule's patches: the annotations it owns are only
// ever set (a stored mark is carried over, never dropped), and a key the
// object has is changed with "replace".
var annotations = annotationpatch.New(annotationpatch.Options{Replace: true}, annotationKeys...)

// annotationPatch is the JSON patch that sets the annotations in set on o:
// one "add" of the whole map when the object has no annotations,
// otherwise an "add" for each new key and a "replace" for each existing
// one.
func annotationPatch(o *fluxObject, set map[string]string) []jsonpatch.JsonPatchOperation {
	return annotations.Ops(o.annotations, o.view.HasAnnotations(), set)
}
