package object

import "bytes"

// Reading JSON values in place, for rules that walk documents the view
// does not model (managedFields' fieldsV1 trees, list items): the same
// lazy reader the view uses, so such a walk decodes nothing.

// Member is one member of a JSON object: its key, unescaped, and its
// value's text (Key is nil for an array's element).
type Member = rawMember

// Members appends the members of the JSON object raw to buf, in the order
// written; nothing for any other value. raw should be valid JSON (a
// view's field): of anything else it returns the members before the
// first fault.
func Members(raw []byte, buf []Member) []Member { return objectMembers(trimSpace(raw), buf) }

// Elements appends the elements of the JSON array raw to buf, in order,
// as Members without keys; nothing for any other value. It reads as
// Members does.
func Elements(raw []byte, buf []Member) []Member { return arrayElements(trimSpace(raw), buf) }

// Members is Members of raw, a value v returned (a field, or a member or
// element of one, at any depth): through v's index it passes each nested
// container in one step, where Members reads it through, so a walk down
// a large value (a managedFields entry's fieldsV1 tree) reads each byte
// about once rather than once per level. Of any other text it is Members.
func (v *View) Members(raw []byte, buf []Member) []Member {
	return v.indexed().objectMembers(trimSpace(raw), buf)
}

// Member is the value of the first member of the JSON object raw whose
// key, unescaped, is key: v.Members' member, found without splitting the
// members after it. ok is false when raw has no such member or is no
// object.
func (v *View) Member(raw []byte, key []byte) (value []byte, ok bool) {
	return v.indexed().member(trimSpace(raw), key)
}

// Hollow reports whether the valid JSON value raw is no object with a
// member: an empty object, or any other value, of which Members returns
// nothing.
func Hollow(raw []byte) bool {
	raw = trimSpace(raw)
	if kindOf(raw) != '{' {
		return true
	}
	rest := trimSpace(raw[1:])
	return len(rest) == 0 || rest[0] == '}'
}

// Elements is Elements of raw, read as v.Members reads.
func (v *View) Elements(raw []byte, buf []Member) []Member {
	return v.indexed().arrayElements(trimSpace(raw), buf)
}

// indexed is v's index once v is read; empty, so that splits are the
// lazy ones, when v is no object.
func (v *View) indexed() *rawIndex {
	if !v.Valid() {
		return nil
	}
	return &v.ix
}

// Text is the text of the JSON string raw, "" for any other value.
func Text(raw []byte) string { return stringValue(trimSpace(raw)) }

// SameScalar reports whether two JSON scalars are the same value: strings
// by their text, whatever their escaping, and other values by their text
// as written (the API server writes numbers one way).
func SameScalar(a, b []byte) bool {
	a, b = trimSpace(a), trimSpace(b)
	if kindOf(a) == '"' && kindOf(b) == '"' {
		// Compared as bytes: a string without escapes is its own text,
		// read in place rather than copied into a string.
		return bytes.Equal(unquote(a), unquote(b))
	}
	return string(a) == string(b)
}
