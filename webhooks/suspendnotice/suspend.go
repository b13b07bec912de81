package suspendnotice

import (
	"fmt"
	"net/http"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/internal/annotationpatch"
	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// fluxObject is the part of a Flux object the rule reads.
type fluxObject struct {
	name, namespace string
	// annotations holds the suspension record's annotations, no others;
	// hasAnnotations is whether the object has any, which decides the
	// shape of the patch.
	annotations    map[string]string
	hasAnnotations bool
	// suspend is whether spec.suspend is JSON true: only true suspends,
	// as in the webhook's match condition.
	suspend bool
}

func (o *fluxObject) suspended() bool {
	return o != nil && o.suspend
}

// record returns the suspension annotations, and whether both are set.
func (o *fluxObject) record() (by, at string, ok bool) {
	if o == nil {
		return "", "", false
	}
	by, hasBy := o.annotations[AnnotationSuspendedBy]
	at, hasAt := o.annotations[AnnotationSuspendedAt]
	return by, at, hasBy && hasAt
}

func decodeFluxObject(v *object.View) (*fluxObject, error) {
	if err := v.FormErr(); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	return &fluxObject{
		name: v.Name(), namespace: v.Namespace(),
		annotations:    v.AnnotationsOf(AnnotationSuspendedBy, AnnotationSuspendedAt),
		hasAnnotations: v.HasAnnotations(),
		suspend:        string(v.Field("spec", "suspend")) == "true",
	}, nil
}

// suspension keeps the suspension record in step with spec.suspend: set
// when it turns true, kept as it was while it stays true, removed when it
// turns false.
func (r *Rule) suspension(req *rule.Request) admission.Response {
	kind, ok := byGroupKind[schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}]
	if !ok || req.SubResource != "" {
		return admission.Allowed("")
	}
	obj, err := decodeFluxObject(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old *fluxObject
	if req.Operation == admissionv1.Update {
		if old, err = decodeFluxObject(req.OldView()); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}

	var want map[string]string // nil: no record
	var reason, warning string
	switch {
	case obj.suspended() && !old.suspended():
		want = map[string]string{AnnotationSuspendedBy: req.UserInfo.Username, AnnotationSuspendedAt: r.now().UTC().Format(time.RFC3339)}
		reason = "recorded the suspension"
		warning = Name + ": " + suspendedMessage(kind, obj.namespace, obj.name)
	case obj.suspended():
		// Still suspended: the first record stands. An object suspended
		// before Steward was installed has none; one written by hand
		// then is kept, so old suspensions can be recorded.
		by, at, ok := old.record()
		if !ok {
			return admission.Allowed("")
		}
		want = map[string]string{AnnotationSuspendedBy: by, AnnotationSuspendedAt: at}
		reason = "kept the suspension record"
	default:
		reason = "removed the suspension record"
	}
	ops := annotationPatch(obj.annotations, obj.hasAnnotations, want)
	if len(ops) == 0 && warning == "" {
		return admission.Allowed("")
	}
	resp := admission.Patched(reason, ops...)
	if warning != "" {
		resp = resp.WithWarnings(warning)
	}
	return resp
}

// suspendedMessage says that an object is suspended and how to resume
// it: the warning given when it is suspended, and the audit's finding.
func suspendedMessage(kind fluxKind, namespace, name string) string {
	return fmt.Sprintf("%s %s/%s is suspended and will not reconcile until resumed: %s %s -n %s",
		kind.Kind, namespace, name, kind.Resume, name, namespace)
}

// suspensionRecord writes the patch that makes the two suspension
// annotations of an object equal want, removing them when want lacks
// them, and touches nothing else.
var suspensionRecord = annotationpatch.New(annotationpatch.Options{Remove: true}, AnnotationSuspendedBy, AnnotationSuspendedAt)

// annotationPatch returns the JSON patch that makes the two suspension
// annotations of an object with the annotations have (and any annotations
// at all when hasAnnotations) equal want (absent when want is nil).
func annotationPatch(have map[string]string, hasAnnotations bool, want map[string]string) []jsonpatch.JsonPatchOperation {
	return suspensionRecord.Ops(have, hasAnnotations, want)
}
