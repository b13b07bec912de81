package object

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// ErrNotServerForm refuses an object encoding/json would read but that is
// not in the form the API server sends. The API server never sends one,
// and judging it would need a second, slower reader to say what
// encoding/json makes of it.
var ErrNotServerForm = errors.New("the object is not in the form the API server sends (repeated, escaped or differently-cased field names, or null values)")

// metaFields are the members of metadata ServerForm checks the form of:
// encoding/json matches struct fields case-insensitively, so a key that
// differs from one of them only in case would be read as that field.
var metaFields = [...]string{"name", "generateName", "namespace", "deletionTimestamp", "labels", "annotations"}

// ServerForm reports whether the object is in the form the API server
// sends, where what a View reads of it is exactly what encoding/json
// decodes: one JSON object and nothing after it, whose keys, and metadata's, are ASCII and not
// escaped; metadata present once, an object, and spec at most once, with
// no other key that differs from them only in case; in metadata each of
// name, generateName, namespace, deletionTimestamp, labels and
// annotations at most once and spelt exactly, the first three strings
// and labels and annotations objects of strings.
func (v *View) ServerForm() bool {
	if !v.Valid() || !v.whole {
		return false
	}
	var seenMeta, seenSpec bool
	for _, m := range v.topMembers() {
		switch {
		case !v.plainKey(m.Key):
			return false
		case string(m.Key) == "metadata":
			if seenMeta || kindOf(m.Value) != '{' {
				return false
			}
			seenMeta = true
		case string(m.Key) == "spec":
			if seenSpec {
				return false
			}
			seenSpec = true
		case bytes.EqualFold(m.Key, []byte("metadata")), bytes.EqualFold(m.Key, []byte("spec")):
			return false
		}
	}
	return seenMeta && v.metaServerForm()
}

func (v *View) metaServerForm() bool {
	var seen [len(metaFields)]bool
	for _, m := range v.metaMembers() {
		if !v.plainKey(m.Key) {
			return false
		}
		field := -1
		for i, f := range metaFields {
			if bytes.EqualFold(m.Key, []byte(f)) {
				field = i
			}
		}
		if field < 0 {
			continue
		}
		if seen[field] || string(m.Key) != metaFields[field] {
			return false
		}
		seen[field] = true
		switch field {
		case 0, 1, 2:
			if kindOf(m.Value) != '"' {
				return false
			}
		case 4, 5:
			if !v.stringsOnly(m.Value) {
				return false
			}
		}
	}
	return true
}

// stringsOnly reports whether val is an object whose values are all
// strings.
func (v *View) stringsOnly(val []byte) bool {
	if kindOf(val) != '{' {
		return false
	}
	var scratch [32]rawMember
	for _, m := range v.ix.objectMembers(val, scratch[:0]) {
		if kindOf(m.Value) != '"' {
			return false
		}
	}
	return true
}

// plainKey reports whether a member's key, as a split returned it, is
// written in the object's text as it reads: ASCII, without escapes. A
// key that needed unescaping is a copy, not a slice of the text.
func (v *View) plainKey(k []byte) bool {
	if len(k) == 0 {
		return true // only "" reads as empty: an escape yields a character
	}
	off := cap(v.doc) - cap(k)
	if off < 0 || off >= len(v.doc) || &v.doc[off] != &k[0] {
		return false
	}
	for _, c := range k {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// FormErr is nil when the object is in the form the API server sends
// (ServerForm), and otherwise says what is wrong with it: that the request
// carries none, why it is not a JSON object (Err), where encoding/json finds a field of the wrong type,
// in the object's own terms, that it has no metadata, or
// ErrNotServerForm.
func (v *View) FormErr() error {
	if v.ServerForm() {
		return nil
	}
	if !v.Present() {
		return errors.New("the request carries no object")
	}
	if err := v.Err(); err != nil {
		return err
	}
	var o struct {
		Metadata *struct {
			Name              string            `json:"name"`
			GenerateName      string            `json:"generateName"`
			Namespace         string            `json:"namespace"`
			DeletionTimestamp json.RawMessage   `json:"deletionTimestamp"`
			Labels            map[string]string `json:"labels"`
			Annotations       map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(v.raw, &o); err != nil {
		return plainJSONError(err)
	}
	if o.Metadata == nil {
		return errors.New("the object has no metadata")
	}
	return ErrNotServerForm
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
