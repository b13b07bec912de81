package fleetguard

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// ownershipLabels and ownershipAnnotations are the only keys objectMeta's
// methods read; metaFromDoc keeps no others, so judging an update does
// not copy every label and annotation (kubectl's last-applied
// configuration is often the largest of them).
var (
	ownershipLabels      = []string{LabelHash}
	ownershipAnnotations = []string{AnnotationID, AnnotationOwnerGVK, AnnotationReleaseName, AnnotationReleaseNamespace}
)

// metaFromDoc reads the metadata of an object read into a rawDoc, without
// decoding the rest: fields of an unexpected type count as absent and, as
// in a decoded map, the last of repeated keys wins. Labels and annotations
// hold only the ownership keys. It is lenient where decodeMeta is strict:
// an update is judged on what both objects hold, whatever their form.
func metaFromDoc(d *rawDoc) objectMeta {
	var m objectMeta
	var scratch [32]member
	md := lastMember(d.ix.SplitObject(d.raw, scratch[:0]), "metadata")
	if rawKind(md) != rawObject {
		return m
	}
	for _, f := range d.ix.SplitObject(md, scratch[:0]) {
		switch string(f.Key) {
		case "name":
			m.Name = rawString(f.Value)
		case "generateName":
			m.GenerateName = rawString(f.Value)
		case "namespace":
			m.Namespace = rawString(f.Value)
		case "labels":
			m.Labels = pickStrings(&d.ix, f.Value, ownershipLabels)
		case "annotations":
			m.Annotations = pickStrings(&d.ix, f.Value, ownershipAnnotations)
		}
	}
	return m
}

// lastMember returns the value of the last member named key, or nil.
func lastMember(ms []member, key string) []byte {
	var v []byte
	for _, m := range ms {
		if string(m.Key) == key {
			v = m.Value
		}
	}
	return v
}

// rawString returns the raw value as a string if it is one, else "".
func rawString(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	return string(rawjson.Unquote(v))
}

// pickStrings returns the string members named in keys of the raw object
// v, in ix's text: a member that is not a string counts as absent, and
// the last of repeated keys wins, as in a decoded map.
func pickStrings(ix *rawjson.Index, v []byte, keys []string) map[string]string {
	if rawKind(v) != rawObject {
		return nil
	}
	var out map[string]string
	var scratch [32]member
	for _, f := range ix.SplitObject(v, scratch[:0]) {
		for _, k := range keys {
			if string(f.Key) != k {
				continue
			}
			if f.Value[0] != '"' {
				delete(out, k)
				break
			}
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = string(rawjson.Unquote(f.Value))
			break
		}
	}
	return out
}

// metaFields are the members of metadata objectMeta decodes.
var metaFields = []string{"name", "generateName", "namespace", "labels", "annotations"}

// strictMetaFromRaw is decodeMeta for the plain case, without decoding the
// object: it reads the same fields when decodeMeta would succeed and the
// keys are spelled exactly, once each. Otherwise it reports false and the
// caller decodes (encoding/json matches struct fields case-insensitively,
// merges repeated maps and words the errors; none of that is copied
// here). Labels and annotations hold only the ownership keys.
func strictMetaFromRaw(raw []byte) (objectMeta, bool) {
	var m objectMeta
	var d rawDoc
	if !d.index(raw) {
		return m, false
	}
	var scratch [32]member
	var md []byte
	for _, f := range d.ix.SplitObject(d.raw, scratch[:0]) {
		switch {
		case string(f.Key) == "metadata":
			if md != nil {
				return m, false
			}
			md = f.Value
		case !unrelatedKey(f.Key, "metadata"):
			return m, false
		}
	}
	switch rawKind(md) {
	case rawNull:
		return m, true
	case rawObject:
	default:
		return m, false
	}
	var seen [5]bool
	for _, f := range d.ix.SplitObject(md, scratch[:0]) {
		i := slices.Index(metaFields, string(f.Key))
		if i < 0 {
			if !unrelatedKey(f.Key, metaFields...) {
				return m, false
			}
			continue
		}
		if seen[i] {
			return m, false
		}
		seen[i] = true
		var ok bool
		switch i {
		case 0:
			m.Name, ok = strictString(f.Value)
		case 1:
			m.GenerateName, ok = strictString(f.Value)
		case 2:
			m.Namespace, ok = strictString(f.Value)
		case 3:
			m.Labels, ok = strictStrings(&d.ix, f.Value, ownershipLabels)
		case 4:
			m.Annotations, ok = strictStrings(&d.ix, f.Value, ownershipAnnotations)
		}
		if !ok {
			return m, false
		}
	}
	return m, true
}

// unrelatedKey reports whether encoding/json certainly matches key to
// none of the struct fields named: it is ASCII and equals none of them
// ignoring case.
func unrelatedKey(key []byte, fields ...string) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f)) {
			return false
		}
	}
	return true
}

// strictString decodes a string field: null leaves it empty, other types
// are errors.
func strictString(v []byte) (string, bool) {
	switch v[0] {
	case '"':
		return string(rawjson.Unquote(v)), true
	case 'n':
		return "", true
	}
	return "", false
}

// strictStrings decodes a map[string]string field, keeping the keys
// named: null is no map, a value of null is "", other types are errors.
// v is in ix's text.
func strictStrings(ix *rawjson.Index, v []byte, keys []string) (map[string]string, bool) {
	switch rawKind(v) {
	case rawNull:
		return nil, true
	case rawObject:
	default:
		return nil, false
	}
	var out map[string]string
	var scratch [32]member
	for _, f := range ix.SplitObject(v, scratch[:0]) {
		s, ok := strictString(f.Value)
		if !ok {
			return nil, false
		}
		if slices.Contains(keys, string(f.Key)) {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[string(f.Key)] = s
		}
	}
	return out, true
}
