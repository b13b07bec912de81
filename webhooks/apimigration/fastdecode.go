package apimigration

import (
	"bytes"
	"encoding/json"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// maxDepth bounds the nesting decodeFast reads: encoding/json's own limit,
// so that no object is refused for its depth alone.
const maxDepth = rawjson.MaxDepth

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
// without building anything the rule does not look at. It reads strictly
// (rawjson.NewStrict): what it accepts is valid JSON. Its maps hold only
// the keys the rule reads (annotationKeys and ownerLabels): every other
// key is checked to be a string, as decodeObject checks it, and dropped.
// It also records whether metadata.annotations is present, which decides
// the shape of the patch.
//
// ok is false whenever the object is not of the form the API server sends
// (invalid JSON, no metadata, a field of the wrong type, a duplicate or
// differently-cased or escaped field name, ...); readObject then says
// why. When ok is true the result equals what encoding/json decodes
// (decodeObject) on the keys the rule reads.
func decodeFast(raw []byte) (o object, ok bool) {
	s := rawjson.NewStrict(raw, maxDepth)
	if !s.OpenObject() {
		return o, false
	}
	var seenMeta, seenSpec bool
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if !ok {
			return o, false
		}
		if end {
			break
		}
		switch {
		case !key.Plain():
			// An escaped or non-ASCII name could still mean metadata
			// or spec to encoding/json.
			return o, false
		case key.Is("metadata"):
			if seenMeta || !readMetadata(&s, &o) {
				return o, false
			}
			seenMeta = true
		case key.Is("spec"):
			spec, ok := s.RawValue()
			if seenSpec || !ok {
				return o, false
			}
			o.Spec, seenSpec = spec, true
		case bytes.EqualFold(key.Inner(), []byte("metadata")), bytes.EqualFold(key.Inner(), []byte("spec")):
			return o, false
		default:
			if !s.Value() {
				return o, false
			}
		}
	}
	if !s.End() || !seenMeta {
		return o, false
	}
	return o, true
}

// readMetadata reads the metadata object into o.
func readMetadata(s *rawjson.Scanner, o *object) bool {
	if !s.OpenObject() {
		return false
	}
	var seen [6]bool
	m := &o.Metadata
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		if !key.Plain() {
			return false
		}
		field := -1
		for i, f := range metadataFields {
			if bytes.EqualFold(key.Inner(), []byte(f)) {
				field = i
			}
		}
		if field < 0 {
			if !s.Value() {
				return false
			}
			continue
		}
		if seen[field] || !key.Is(metadataFields[field]) {
			return false
		}
		seen[field] = true
		switch field {
		case 0, 1, 2:
			v, ok := s.StringValue()
			if !ok {
				return false
			}
			switch field {
			case 0:
				m.Name = v.Text()
			case 1:
				m.GenerateName = v.Text()
			default:
				m.Namespace = v.Text()
			}
		case 3:
			v, ok := s.RawValue()
			if !ok {
				return false
			}
			if string(v) != "null" {
				ts := json.RawMessage(v)
				m.DeletionTimestamp = &ts
			}
		case 4:
			if m.Labels, ok = stringMap(s, ownerLabels); !ok {
				return false
			}
		case 5:
			if m.Annotations, ok = stringMap(s, annotationKeys); !ok {
				return false
			}
			o.hasAnnotations = true
		}
	}
}

// stringMap reads an object whose values must all be strings, keeping the
// given keys. Duplicate keys resolve as in encoding/json: the last wins.
func stringMap(s *rawjson.Scanner, keep []string) (map[string]string, bool) {
	if !s.OpenObject() {
		return nil, false
	}
	var out map[string]string
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if !ok {
			return nil, false
		}
		if end {
			return out, true
		}
		v, ok := s.StringValue()
		if !ok {
			return nil, false
		}
		if k, ok := oneOf(key, keep); ok {
			if out == nil {
				out = make(map[string]string, len(keep))
			}
			out[k] = v.Text()
		}
	}
}

// oneOf returns the entry of keys that the JSON string key decodes to.
func oneOf(key rawjson.String, keys []string) (string, bool) {
	var name []byte
	switch {
	case key.Plain():
		name = key.Inner()
	case key.Escaped():
		name = key.Bytes()
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
