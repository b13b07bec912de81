package apimigration

import (
	"github.com/stewardhq/steward/webhooks/object"
)

// annotationKeys are the annotations the rule reads and writes; it copies
// no others.
var annotationKeys = []string{MigratedFromAnnotation, MigratedAtAnnotation, RequestedAtAnnotation}

// fluxObject is the little of a Flux object the rule reads, through the
// request's view of it. Everything else in the request is left as the
// client sent it.
type fluxObject struct {
	view *object.View
	// annotations holds the object's annotationKeys, no others.
	annotations map[string]string
}

// readObject reads an admission request's object. It fails on anything
// that is not a JSON object with a metadata object, in the API server's
// form: patching anything else would mean writing metadata wholesale.
func readObject(v *object.View) (fluxObject, error) {
	if err := v.FormErr(); err != nil {
		return fluxObject{}, err
	}
	return fluxObject{view: v, annotations: v.AnnotationsOf(annotationKeys...)}, nil
}

// sameSpec reports whether two objects have the same spec, ignoring
// formatting and key order. Flux controllers reconcile when the spec
// changes (the generation moves) or a reconcile annotation changes, so the
// spec is what decides whether a write asks for new work.
func sameSpec(a, b *fluxObject) bool {
	return object.Equal(a.view, b.view, "spec")
}
