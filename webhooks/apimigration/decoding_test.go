package apimigration

// The decoding reading of a write, kept as the oracle FuzzHandle and
// TestPatchAppliesToTheObject hold the rule's reading through object
// views to.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// markDecoded is mark by decoding: it decodes the objects with
// encoding/json, compares specs decoded, and diffs the metadata before and
// after the annotations are set. It was the rule's reference path; mark
// answers as it does for every object in the API server's form, at a
// fraction of the cost.
func (r *Rule) markDecoded(req admission.Request, f Finding) admission.Response {
	warning := f.Warning()
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	var old *decoded
	if req.Operation == admissionv1.Update {
		if old, err = decodeObject(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the stored object: %w", err))
		}
	}
	var set map[string]string
	if !obj.terminating() {
		var o map[string]string
		if old != nil {
			o = old.Metadata.Annotations
		}
		sameSpec := func() bool { return decodedEqual(old.Spec, obj.Spec) }
		set = plan(f.From(), obj.Metadata.Annotations, o, old != nil, sameSpec, r.now().UTC().Format(time.RFC3339Nano))
	}
	resp := admission.Allowed(warning)
	if len(set) > 0 {
		// The patch is computed from the object's metadata alone, as raw
		// bytes: patch paths are absolute, so they are the same as for the
		// whole object, and a large spec is not walked twice for nothing.
		original, err := metadataOnly(req.Object.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		mutated, err := withAnnotations(original, set)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		resp = admission.PatchResponseFromRaw(original, mutated)
		if !resp.Allowed {
			return resp
		}
		resp.Result = &metav1.Status{Code: http.StatusOK, Message: warning}
	}
	return resp.WithWarnings(warning)
}

// metadataOnly returns {"metadata": <the object's metadata, byte for byte>}.
func metadataOnly(raw []byte) ([]byte, error) {
	var o struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	if len(o.Metadata) == 0 {
		return nil, errors.New("the object has no metadata")
	}
	return append(append([]byte(`{"metadata":`), o.Metadata...), '}'), nil
}

// withAnnotations returns raw with the given annotations set and nothing
// else changed. Only metadata.annotations is decoded and re-encoded; every
// other field is carried over byte for byte as json.RawMessage, so the
// patch computed from the two documents touches annotations alone.
func withAnnotations(raw []byte, set map[string]string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	var meta map[string]json.RawMessage
	if m, ok := top["metadata"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("decoding metadata: %w", err)
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	annotations := map[string]string{}
	if a, ok := meta["annotations"]; ok && string(a) != "null" {
		if err := json.Unmarshal(a, &annotations); err != nil {
			return nil, fmt.Errorf("decoding metadata.annotations: %w", err)
		}
	}
	for k, v := range set {
		annotations[k] = v
	}
	var err error
	if meta["annotations"], err = json.Marshal(annotations); err != nil {
		return nil, err
	}
	if top["metadata"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// decoded is the little of a Flux object the rule reads, decoded.
type decoded struct {
	Metadata metadata
	Spec     json.RawMessage
}

// metadata is the part of metadata the rule reads.
type metadata struct {
	Name              string            `json:"name"`
	GenerateName      string            `json:"generateName"`
	Namespace         string            `json:"namespace"`
	DeletionTimestamp *json.RawMessage  `json:"deletionTimestamp"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
}

// decodeObject decodes an object with encoding/json.
func decodeObject(raw []byte) (*decoded, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("the request carries no object")
	}
	var o struct {
		Metadata *metadata       `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	if o.Metadata == nil {
		return nil, errors.New("the object has no metadata")
	}
	return &decoded{Metadata: *o.Metadata, Spec: o.Spec}, nil
}

// terminating reports whether the object is being deleted.
func (o *decoded) terminating() bool {
	return o.Metadata.DeletionTimestamp != nil && string(*o.Metadata.DeletionTimestamp) != "null"
}

// decodedEqual compares two specs decoded, as reflect.DeepEqual does.
func decodedEqual(a, b json.RawMessage) bool {
	va, errA := decodeAny(a)
	vb, errB := decodeAny(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// decodeAny decodes JSON keeping numbers exact, so 1 and 1.0000000000000001
// are not taken for equal. A missing or null spec decodes to nil.
func decodeAny(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
