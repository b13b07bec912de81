package apimigration

import (
	"bytes"
	"encoding/json"
)

// annotationKeys are the annotations the rule reads and writes; the fast
// decoder keeps no others.
var annotationKeys = []string{MigratedFromAnnotation, MigratedAtAnnotation, RequestedAtAnnotation}

// ownerLabels are the labels appliedBy reads.
var ownerLabels = []string{KustomizeGroup + "/name", KustomizeGroup + "/namespace", HelmGroup + "/name", HelmGroup + "/namespace"}

// metadataFields are the fields of metadata that decodeObject reads.
// encoding/json matches struct fields case-insensitively, so a key that
// differs from one of them only in case is left to encoding/json.
var metadataFields = []string{"name", "generateName", "namespace", "deletionTimestamp", "labels", "annotations"}

// decodeFast reads what decodeObject reads, in one pass over the bytes and
// without building anything the rule does not look at. Its maps hold only
// the keys the rule reads (annotationKeys and ownerLabels): every other
// key is checked to be a string, as decodeObject checks it, and dropped.
// It also records whether metadata.annotations is present, which decides
// the shape of the patch.
//
// ok is false whenever the object is not of the form the API server sends
// (invalid JSON, no metadata, a field of the wrong type, a duplicate or
// differently-cased or escaped field name, ...); the caller then uses
// decodeObject, whose answer, error message included, is the rule's. When
// ok is true the result equals decodeObject's on the keys the rule reads.
func decodeFast(raw []byte) (o object, ok bool) {
	s := scanner{data: raw}
	s.ws()
	if !s.open('{') {
		return o, false
	}
	var seenMeta, seenSpec bool
	for first := true; ; first = false {
		key, end, ok := s.member(first)
		if !ok {
			return o, false
		}
		if end {
			break
		}
		switch {
		case !key.plain():
			// An escaped or non-ASCII name could still mean metadata
			// or spec to encoding/json.
			return o, false
		case key.is("metadata"):
			if seenMeta || !s.metadata(&o) {
				return o, false
			}
			seenMeta = true
		case key.is("spec"):
			start := s.pos
			if seenSpec || !s.value() {
				return o, false
			}
			o.Spec, seenSpec = raw[start:s.pos], true
		case bytes.EqualFold(key.inner(), []byte("metadata")), bytes.EqualFold(key.inner(), []byte("spec")):
			return o, false
		default:
			if !s.value() {
				return o, false
			}
		}
	}
	if !s.end() || !seenMeta {
		return o, false
	}
	return o, true
}

// metadata reads the metadata object into o.
func (s *scanner) metadata(o *object) bool {
	if !s.open('{') {
		return false
	}
	var seen [6]bool
	m := &o.Metadata
	for first := true; ; first = false {
		key, end, ok := s.member(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		if !key.plain() {
			return false
		}
		field := -1
		for i, f := range metadataFields {
			if bytes.EqualFold(key.inner(), []byte(f)) {
				field = i
			}
		}
		if field < 0 {
			if !s.value() {
				return false
			}
			continue
		}
		if seen[field] || !key.is(metadataFields[field]) {
			return false
		}
		seen[field] = true
		switch field {
		case 0, 1, 2:
			if s.peek() != '"' {
				return false
			}
			v, ok := s.str()
			if !ok {
				return false
			}
			switch field {
			case 0:
				m.Name = v.decode()
			case 1:
				m.GenerateName = v.decode()
			default:
				m.Namespace = v.decode()
			}
		case 3:
			start := s.pos
			if !s.value() {
				return false
			}
			if v := s.data[start:s.pos]; string(v) != "null" {
				ts := json.RawMessage(v)
				m.DeletionTimestamp = &ts
			}
		case 4:
			if m.Labels, ok = s.stringMap(ownerLabels); !ok {
				return false
			}
		case 5:
			if m.Annotations, ok = s.stringMap(annotationKeys); !ok {
				return false
			}
			o.hasAnnotations = true
		}
	}
}

// stringMap reads an object whose values must all be strings, keeping the
// given keys. Duplicate keys resolve as in encoding/json: the last wins.
func (s *scanner) stringMap(keep []string) (map[string]string, bool) {
	if !s.open('{') {
		return nil, false
	}
	var out map[string]string
	for first := true; ; first = false {
		key, end, ok := s.member(first)
		if !ok {
			return nil, false
		}
		if end {
			return out, true
		}
		if s.peek() != '"' {
			return nil, false
		}
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		if k, ok := oneOf(key, keep); ok {
			if out == nil {
				out = make(map[string]string, len(keep))
			}
			out[k] = v.decode()
		}
	}
}

// oneOf returns the entry of keys that the JSON string key decodes to.
func oneOf(key token, keys []string) (string, bool) {
	var name []byte
	switch {
	case key.plain():
		name = key.inner()
	case key.escaped:
		name = []byte(key.decode())
	default: // Unescaped non-ASCII never equals an ASCII key.
		return "", false
	}
	for _, k := range keys {
		if string(name) == k {
			return k, true
		}
	}
	return "", false
}
