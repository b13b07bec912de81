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

// errNotServerForm refuses an object encoding/json would read but
// decodeFast does not: one with repeated, escaped or differently-cased
// field names, or null where a value belongs. The API server never sends
// one, and reading it a second, slower way would mean a second decoder to
// keep in step with the first.
var errNotServerForm = errors.New("the object is not in the form the API server sends (repeated, escaped or differently-cased field names, or null values)")

// readObject reads an admission request's object with decodeFast, the
// rule's one reader. It fails on anything that is not a JSON object with
// a metadata object, in the API server's form: patching anything else
// would mean writing metadata wholesale.
func readObject(raw []byte) (object, error) {
	if o, ok := decodeFast(raw); ok {
		return o, nil
	}
	if _, err := decodeObject(raw); err != nil {
		return object{}, err
	}
	return object{}, errNotServerForm
}

// decodeObject decodes an object decodeFast did not read, to say why:
// encoding/json locates the fault, and plainJSONError says where it is
// in the object's own terms.
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
