package object

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The metadata a View reads is read leniently, as a decoded map would
// hold it: the last of repeated keys wins, and a member of an unexpected
// type reads as absent. The API server sends every object in one form
// (ServerForm), where this is exactly what encoding/json decodes; rules
// that must not judge anything else check ServerForm first.

// Name returns metadata.name, or "".
func (v *View) Name() string { return v.metaString("name") }

// GenerateName returns metadata.generateName, or "".
func (v *View) GenerateName() string { return v.metaString("generateName") }

// Namespace returns metadata.namespace, or "".
func (v *View) Namespace() string { return v.metaString("namespace") }

// UID returns metadata.uid, or "".
func (v *View) UID() string { return v.metaString("uid") }

// Deleting reports whether metadata.deletionTimestamp is set: the object
// is being deleted.
func (v *View) Deleting() bool {
	return kindOf(lastMember(v.metaMembers(), "deletionTimestamp")) != 'n'
}

func (v *View) metaString(key string) string {
	return stringValue(lastMember(v.metaMembers(), key))
}

// String returns the string at path, or "" where there is none or the
// value is not a string.
func (v *View) String(path ...string) string { return stringValue(v.Field(path...)) }

// stringValue returns the text of a JSON string, "" for any other value.
func stringValue(val []byte) string {
	if kindOf(val) != '"' {
		return ""
	}
	return string(unquote(val))
}

func (v *View) labelMembers() []rawMember {
	return v.members(haveLabels, &v.labels, func() []byte { return lastMember(v.metaMembers(), "labels") })
}

func (v *View) annotationMembers() []rawMember {
	return v.members(haveAnnotations, &v.annotations, func() []byte { return lastMember(v.metaMembers(), "annotations") })
}

// Label returns the label key and whether the object has it.
func (v *View) Label(key string) (string, bool) { return lookup(v.labelMembers(), key) }

// Annotation returns the annotation key and whether the object has it.
func (v *View) Annotation(key string) (string, bool) { return lookup(v.annotationMembers(), key) }

// HasAnnotations reports whether metadata.annotations is an object, even
// an empty one: a patch adds to it, or must create it.
func (v *View) HasAnnotations() bool {
	return kindOf(lastMember(v.metaMembers(), "annotations")) == '{'
}

// Labels returns every label, nil when there are none. Rules that need
// only some ask for them with Label, which copies nothing.
func (v *View) Labels() map[string]string { return stringMap(v.labelMembers()) }

// Annotations returns every annotation, as Labels does.
func (v *View) Annotations() map[string]string { return stringMap(v.annotationMembers()) }

// LabelsOf returns the labels among keys the object has, nil when it has
// none: what a rule reads of labels, without copying the others.
func (v *View) LabelsOf(keys ...string) map[string]string { return pick(v.labelMembers(), keys) }

// AnnotationsOf returns the annotations among keys, as LabelsOf does
// (kubectl's last-applied configuration, often the largest, is not
// copied unless asked for).
func (v *View) AnnotationsOf(keys ...string) map[string]string {
	return pick(v.annotationMembers(), keys)
}

func pick(ms []rawMember, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if val, ok := lookup(ms, k); ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = val
		}
	}
	return out
}

// lookup returns the string value of the last member named key; a last
// member of another type reads as absent.
func lookup(ms []rawMember, key string) (string, bool) {
	val := lastMember(ms, key)
	if kindOf(val) != '"' {
		return "", false
	}
	return string(unquote(val)), true
}

func stringMap(ms []rawMember) map[string]string {
	var out map[string]string
	for _, m := range ms {
		if kindOf(m.Value) != '"' {
			delete(out, string(m.Key))
			continue
		}
		if out == nil {
			out = make(map[string]string, len(ms))
		}
		out[string(m.Key)] = string(unquote(m.Value))
	}
	return out
}

// OwnerReferences returns metadata.ownerReferences; a value that is not a
// list of them reads as none (the API server refuses such an object).
func (v *View) OwnerReferences() []metav1.OwnerReference {
	val := lastMember(v.metaMembers(), "ownerReferences")
	var refs []metav1.OwnerReference
	if kindOf(val) == '[' {
		// A reference of the wrong shape is left out, and the others
		// read, as encoding/json reads what it can.
		_ = json.Unmarshal(val, &refs)
	}
	return refs
}
