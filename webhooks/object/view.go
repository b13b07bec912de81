package object

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A View is one object of an admission request, its object or its
// oldObject, as the serving layer hands it to every rule. The first
// question asked of it validates and indexes the object in one pass
// (rawIndex); every later one reads only the members it needs, so the
// metadata, a field or a diff of two objects costs about one read of the
// bytes whatever the rule asks. The serving layer makes the views of a
// request and reuses their memory for the next one (Reset), so a rule
// must not keep a View, or anything a View returned, after Handle
// returns.
//
// A View never panics, on any input: an object that is not a JSON object
// reads as empty, and Err says why.
type View struct {
	// raw is the object as the request carries it; doc is the object
	// without surrounding white space once read.
	raw, doc []byte
	ix       rawIndex
	err      error
	read     bool
	// whole records that nothing but white space follows the object.
	whole bool
	// The members of the levels every rule reads, split once when first
	// asked for (have records which): the object's, metadata's, and the
	// labels' and annotations'.
	have                           uint8
	top, meta, labels, annotations []rawMember
	// scratch is the member buffer Equal and Diff lend (haveScratch
	// records that they did), so comparing allocates nothing.
	scratch []rawMember
}

// The levels a View splits once.
const (
	haveTop = 1 << iota
	haveMeta
	haveLabels
	haveAnnotations
	haveScratch
)

// New returns the view of raw, the JSON text of an object; nil or empty
// text is no object (Present is false).
func New(raw []byte) *View {
	return &View{raw: raw}
}

// Reset makes v the view of raw, keeping the memory v's index and member
// lists grew into, unless they grew for a very large object, and nothing
// of the object it viewed before. A view never asked anything holds only
// its text, so resetting it costs nothing more.
func (v *View) Reset(raw []byte) {
	if v.read || v.have != 0 {
		v.forget()
	}
	v.raw = raw
}

// forget drops everything v read of its object, keeping the memory.
func (v *View) forget() {
	spans := v.ix.spans[:0]
	if cap(spans) > maxKeptSpans {
		spans = nil
	}
	scratch := v.scratch
	if v.have&haveScratch != 0 {
		// A comparison writes past the length it leaves.
		clear(scratch[:cap(scratch)])
	}
	*v = View{
		ix:          rawIndex{spans: spans},
		top:         keep(v.top),
		meta:        keep(v.meta),
		labels:      keep(v.labels),
		annotations: keep(v.annotations),
		scratch:     scratch[:0],
	}
}

// borrow lends v's scratch buffer; giveBack returns it, grown or not.
func (v *View) borrow() []rawMember {
	v.have |= haveScratch
	if v.scratch == nil {
		// The members of the levels a diff of a Deployment descends to,
		// about 60 for an image change.
		v.scratch = make([]rawMember, 0, 64)
	}
	return v.scratch[:0]
}

func (v *View) giveBack(buf []rawMember) {
	if cap(buf) <= maxKeptScratch {
		v.scratch = buf[:0]
	} else {
		clear(v.scratch[:cap(v.scratch)])
		v.scratch = nil
	}
}

// maxKeptSpans and maxKeptMembers bound the memory a reused View keeps:
// an index for objects of about 256 KiB, and member lists for ordinary
// metadata. Larger ones are left to the GC.
const (
	maxKeptSpans   = 4096
	maxKeptMembers = 64
	maxKeptScratch = 1024
)

// keep empties a member list for reuse. Its members point into the text
// it was split from, so they are cleared: a reused view holds no
// reference to the last object. Only the list's length was ever written
// since the last clearing.
func keep(ms []rawMember) []rawMember {
	if cap(ms) > maxKeptMembers {
		return nil
	}
	clear(ms)
	return ms[:0]
}

// Raw returns the object's text as the request carries it.
func (v *View) Raw() []byte { return v.raw }

// Present reports whether the request carries the object at all: the API
// server sends no oldObject on CREATE and no object on DELETE.
func (v *View) Present() bool { return len(v.raw) > 0 }

// Err reads the object, once, and reports why it is not a JSON object, in
// encoding/json's words: the API server only sends objects, so whatever
// sent something else learns exactly what. It reads what a JSON decoder
// reading one value reads: the object that starts the text, whatever
// follows it.
func (v *View) Err() error {
	if !v.read {
		v.read = true
		v.err = v.index()
	}
	return v.err
}

// Valid reports whether the object is a JSON object (Err is nil).
func (v *View) Valid() bool { return v.Err() == nil }

// index validates and indexes raw, or returns why it is not an object.
func (v *View) index() error {
	if v.indexWhole(v.raw) {
		v.whole = true
		return nil
	}
	if s := newStrict(v.raw, maxNesting); s.Peek() == '{' && s.Value() && v.indexWhole(v.raw[:s.Pos()]) {
		return nil
	}
	return objectError(v.raw)
}

// indexWhole indexes raw when raw is exactly one JSON object, with
// nothing but white space around it.
func (v *View) indexWhole(raw []byte) bool {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' || !v.ix.validJSON(raw, maxNesting) {
		return false
	}
	v.doc = trimSpace(raw)
	return true
}

// objectError words why raw is not a JSON object as encoding/json's
// decoder does: Steward's error messages, and so its answers, have always
// been worded by it, and syntax errors are best located by it.
func objectError(raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("object is empty")
	}
	var v json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&v); err != nil {
		return fmt.Errorf("decoding object: %w", err)
	}
	v = trimSpace(v)
	if kindOf(v) == '{' {
		// Unreachable: index reads every object a decoder reads, which
		// FuzzViewMatchesDecoding holds it to.
		return errors.New("decoding object: the object could not be read")
	}
	return fmt.Errorf("object is %s, not a JSON object", describeKind(v))
}

// describeKind names the type of a JSON value that is not an object, as
// error messages do.
func describeKind(v []byte) string {
	switch v[0] {
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// members returns the members of the object's level the have bit names,
// splitting it on first use into *ms; value is that level's text.
func (v *View) members(bit uint8, ms *[]rawMember, value func() []byte) []rawMember {
	if v.have&bit == 0 {
		v.have |= bit
		if t := value(); kindOf(t) == '{' {
			*ms = v.ix.objectMembers(t, (*ms)[:0])
		}
	}
	return *ms
}

// topMembers are the object's own members, none when it is not valid.
func (v *View) topMembers() []rawMember {
	return v.members(haveTop, &v.top, func() []byte {
		if !v.Valid() {
			return nil
		}
		return v.doc
	})
}

// metaMembers are metadata's members, none when it is not an object.
func (v *View) metaMembers() []rawMember {
	return v.members(haveMeta, &v.meta, func() []byte { return lastMember(v.topMembers(), "metadata") })
}

// lastMember returns the value of the last member named key, or nil: the
// last of repeated keys wins, as in a decoded map.
func lastMember(ms []rawMember, key string) []byte {
	var val []byte
	for _, m := range ms {
		if string(m.Key) == key {
			val = m.Value
		}
	}
	return val
}

// Field returns the text of the value at path (object keys from the
// object's top), or nil where a level is missing or not an object. The
// last of repeated keys wins.
func (v *View) Field(path ...string) []byte {
	if len(path) == 0 {
		if !v.Valid() {
			return nil
		}
		return v.doc
	}
	var val []byte
	if path[0] == "metadata" {
		var used int
		val, used = v.metadataField(path[1:])
		path = path[1+used:]
	} else {
		val, path = lastMember(v.topMembers(), path[0]), path[1:]
	}
	var scratch [32]rawMember
	for _, key := range path {
		if kindOf(val) != '{' {
			return nil
		}
		val = lastMember(v.ix.objectMembers(val, scratch[:0]), key)
	}
	return val
}

// metadataField is Field under metadata, through the members a View
// keeps split: metadata itself, one of its members, or a member of its
// labels or annotations. It returns how many keys of path it read; Field
// reads the rest.
func (v *View) metadataField(path []string) ([]byte, int) {
	switch {
	case len(path) == 0:
		return lastMember(v.topMembers(), "metadata"), 0
	case len(path) >= 2 && path[0] == "labels":
		return lastMember(v.labelMembers(), path[1]), 2
	case len(path) >= 2 && path[0] == "annotations":
		return lastMember(v.annotationMembers(), path[1]), 2
	}
	return lastMember(v.metaMembers(), path[0]), 1
}

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

// HasLabel reports whether the object has the label key, as Label does,
// without copying its value.
func (v *View) HasLabel(key string) bool {
	return kindOf(lastMember(v.labelMembers(), key)) == '"'
}

// HasAnnotation reports whether the object has the annotation key, as
// Annotation does, without copying its value.
func (v *View) HasAnnotation(key string) bool {
	return kindOf(lastMember(v.annotationMembers(), key)) == '"'
}

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

// The serving layer decodes an AdmissionReview without its two objects,
// which are most of its bytes and which rules read through Views: it cuts
// them out of the body first.

// CutObjects finds the values of request.object and request.oldObject in
// a review and returns the body with each replaced by null. ok is false
// when the body is not a JSON object with a request object whose members
// can be walked.
//
// The walk is lazy (newLazy): it checks the members it walks and
// finds where values end, which is all cutObjects needs, and leaves the
// rest to the decoder, which validates what it decodes.
func CutObjects(body []byte) (rest, object, oldObject []byte, ok bool) {
	s := newLazy(body)
	var buf [2][2]int
	cuts := buf[:0] // value ranges to replace, in order
	found := false
	ok = members(&s, func(key rawString) bool {
		if !key.Is("request") || s.Peek() != '{' {
			return s.Value()
		}
		found = true
		return members(&s, func(key rawString) bool {
			v, ok := s.RawValue()
			switch {
			case !ok:
				return false
			case key.Is("object"):
				object = v
			case key.Is("oldObject"):
				oldObject = v
			default:
				return true
			}
			cuts = append(cuts, [2]int{s.Pos() - len(v), s.Pos()})
			return true
		})
	})
	if !ok || !found || !s.End() {
		return nil, nil, nil, false
	}
	if len(cuts) == 0 {
		return body, nil, nil, true
	}
	out := make([]byte, 0, len(body)-len(object)-len(oldObject)+8)
	at := 0
	for _, c := range cuts {
		out = append(out, body[at:c[0]]...)
		out = append(out, "null"...)
		at = c[1]
	}
	return append(out, body[at:]...), object, oldObject, true
}

// members walks the object at s's position, calling each with a member's
// key when s is at its value, which each must pass. An escaped key stops
// the walk: it might spell a member that matters, and only the decoder
// can say.
func members(s *rawScanner, each func(key rawString) bool) bool {
	if !s.OpenObject() {
		return false
	}
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		switch {
		case !ok || key.Escaped():
			return false
		case end:
			return true
		case !each(key):
			return false
		}
	}
}

// Diff reports the JSON paths at which two objects differ, the way a
// structural comparison of the decoded objects finds them: objects key by
// key and lists index by index, a missing value, null, {} and [] counting
// alike (the API server omits empty fields, so their presence alone is no
// change), so that the outcome never depends on formatting. A path at or
// under one of skip is not reported; the first limit paths are kept, in
// key and index order, and all are counted.
//
// Only the parts that differ are read past their bytes: members whose
// text is identical are skipped unread (identical text decodes to
// identical values), and skipped paths are never read, so managedFields
// and status, most of an object's bytes, never are. Either view that is
// not a valid object reads as an empty one.
func Diff(old, cur *View, skip []Pointer, limit int) Changes {
	d := differ{skip: skip, limit: limit, path: make(Pointer, 0, 16), views: [2]*View{old, cur}, buf: old.borrow()}
	d.walk(old.Field(), cur.Field(), 0)
	old.giveBack(d.buf)
	return d.out
}

// Changes are the result of a Diff: the first few changed paths, in a
// stable order, and how many there are in total.
type Changes struct {
	First []string
	Total int
}

// Equal reports whether a and b hold equal values at path (object keys
// from the top; none compares the whole objects), as reflect.DeepEqual
// compares what encoding/json decodes with UseNumber: key order, escaping
// and white space do not matter, number text does, and the last of
// repeated keys wins. A missing value equals only a missing one or null.
// Identical text is equal unread; otherwise both values are compared
// through their objects' indexes, reading each byte about once.
func Equal(a, b *View, path ...string) bool {
	x, y := a.Field(path...), b.Field(path...)
	if bytes.Equal(x, y) {
		return true
	}
	eq, buf := equalJSON(&a.ix, x, &b.ix, y, a.borrow())
	a.giveBack(buf)
	return eq
}

// A Pointer is a parsed RFC 6901 JSON pointer: the unescaped reference
// tokens, so "/metadata/annotations/a~1b" is ["metadata", "annotations", "a/b"].
// Diff reports changed paths as Pointers' text and skips the paths it is
// given as Pointers; a patch path or a configured path is spelt with the
// same escaping (EscapeToken).
type Pointer []string

// ParsePointer parses an RFC 6901 JSON pointer. The empty string is the
// whole document; every other pointer starts with "/", and "~" may only
// appear as "~0" (a literal "~") or "~1" (a literal "/").
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer starts with \"/\"")
	}
	raw := strings.Split(s[1:], "/")
	p := make(Pointer, len(raw))
	for i, tok := range raw {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("\"~\" must be followed by \"0\" or \"1\" (token %q)", tok)
			}
		}
		p[i] = unescapeToken(tok)
	}
	return p, nil
}

// String renders the pointer with RFC 6901 escaping.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(EscapeToken(tok))
	}
	return b.String()
}

// HasPrefix reports whether prefix is p itself or one of its ancestors.
func (p Pointer) HasPrefix(prefix Pointer) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// EscapeToken makes a key a reference token: "~" is written "~0" and "/" is
// written "~1", in that order, so that "~1" in a key stays two characters.
// A key with neither is returned as it is, without allocating.
func EscapeToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// unescapeToken undoes EscapeToken: "~1" first, then "~0", so that "~01" becomes
// "~1" and not "/". It does not check the token; a "~" followed by
// anything but "0" or "1" is left as it is.
func unescapeToken(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
