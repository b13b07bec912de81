package apimigration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// object is the little of a Flux object the rule reads. Everything else in
// the request is left as the client sent it.
type object struct {
	Metadata metadata
	// Spec is kept raw: it is only compared, never interpreted.
	Spec json.RawMessage
	// hasAnnotations is set by decodeFast when metadata.annotations is
	// an object, which decides the shape of the patch.
	hasAnnotations bool
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

// decodeObject reads an admission request's object. It fails on anything
// that is not a JSON object with a metadata object: the API server never
// sends one, and patching it would mean writing metadata wholesale.
func decodeObject(raw []byte) (*object, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("the request carries no object")
	}
	var o struct {
		Metadata *metadata       `json:"metadata"`
		Spec     json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, plainJSONError(err)
	}
	if o.Metadata == nil {
		return nil, errors.New("the object has no metadata")
	}
	return &object{Metadata: *o.Metadata, Spec: o.Spec}, nil
}

// terminating reports whether the object is being deleted.
func (o *object) terminating() bool {
	return o.Metadata.DeletionTimestamp != nil && string(*o.Metadata.DeletionTimestamp) != "null"
}

// sameSpec reports whether two objects have the same spec, ignoring
// formatting and key order. Flux controllers reconcile when the spec
// changes (the generation moves) or a reconcile annotation changes, so the
// spec is what decides whether a write asks for new work.
func sameSpec(a, b *object) bool {
	if bytes.Equal(a.Spec, b.Spec) {
		return true
	}
	switch compareSpecs(a.Spec, b.Spec) {
	case same:
		return true
	case different:
		return false
	}
	va, errA := decodeAny(a.Spec)
	vb, errB := decodeAny(b.Spec)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
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

// metadataOnly returns {"metadata": <the object's metadata, byte for byte>}.
func metadataOnly(raw []byte) ([]byte, error) {
	var o struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", plainJSONError(err))
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

// plainJSONError says where a type mismatch is in the object's own terms,
// not the decoder's Go types.
func plainJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	where := "the object"
	if te.Field != "" {
		where = te.Field
	}
	want := "a " + te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice:
		want = "an array"
	}
	return fmt.Errorf("%s is a JSON %s, where %s is expected", where, te.Value, want)
}
