package object

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

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

// maxDiffDepth bounds how deep Diff descends. Below it, two subtrees are
// compared whole and a difference is reported at the deepest path
// reached, so arbitrarily nested input cannot make the paths, or the
// recursion, arbitrarily long.
const maxDiffDepth = 64

// differ walks two objects. views are the old and new object, and buf
// holds the members of the objects and lists in them it is comparing, as
// a stack: each level appends its own and drops them when done.
type differ struct {
	skip  []Pointer
	limit int
	out   Changes
	path  Pointer
	views [2]*View
	buf   []rawMember
}

func (d *differ) report() {
	d.out.Total++
	if len(d.out.First) < d.limit {
		d.out.First = append(d.out.First, d.path.String())
	}
}

// skipped reports whether the current path is at or under a skipped one.
func (d *differ) skipped() bool {
	for _, s := range d.skip {
		if d.path.HasPrefix(s) {
			return true
		}
	}
	return false
}

// walk reports the paths under the current one at which a and b, raw
// values of the old and new object, differ; either is nil when missing.
// An added or removed subtree is reported leaf by leaf, counting a
// missing value as an empty object or list: every path can be pasted
// into ignoredFields as it is, and ignored paths inside it still apply.
func (d *differ) walk(a, b []byte, depth int) {
	if identical(a, b, depth) || d.skipped() || (rawEmpty(a) && rawEmpty(b)) {
		return
	}
	if depth >= maxDiffDepth {
		if !d.same(a, b) {
			d.report()
		}
		return
	}
	ka, kb := kindOf(a), kindOf(b)
	switch {
	case (ka == '{' || ka == 'n') && (kb == '{' || kb == 'n'):
		d.walkObjects(a, b, ka == '{', kb == '{', depth)
	case (ka == '[' || ka == 'n') && (kb == '[' || kb == 'n'):
		d.walkLists(a, b, ka == '[', kb == '[', depth)
	case scalar(ka) && scalar(kb) && d.same(a, b):
		// The same string, escaped differently.
	default:
		// A type change, or two different scalars.
		d.report()
	}
}

// maxLazyDepth is how deep the diff skips members whose text is identical
// in both objects. Comparing a member's text reads everything nested in
// it, so the shortcut, repeated at every level, reads the deepest bytes
// once per level; below this depth members are compared structurally,
// which through the objects' indexes reads each byte once.
const maxLazyDepth = 16

// identical reports whether two raw values at the given depth are the
// same text, above maxLazyDepth: identical text decodes to identical
// values, so the structural comparison would find nothing in them.
func identical(a, b []byte, depth int) bool {
	return depth < maxLazyDepth && bytes.Equal(a, b)
}

// rawEmpty reports whether a raw value is missing, null, {} or []: the
// API server omits empty fields, so their presence alone is no change.
func rawEmpty(v []byte) bool {
	switch kindOf(v) {
	case 'n':
		return true
	case '{', '[':
		return skipSpace(v, 1) == len(v)-1
	}
	return false
}

// scalar reports whether a kind kindOf returned is a string, number or
// boolean.
func scalar(k byte) bool { return k == '"' || k == 's' }

// same reports whether a and b, raw values of the old and new object,
// decode to equal values; unlike walk, it counts no empty value equal
// to another of a different type.
func (d *differ) same(a, b []byte) bool {
	// The comparison splits into d.buf's room past the levels walked,
	// which the walk reuses once it returns.
	eq, buf := equalJSON(&d.views[0].ix, a, &d.views[1].ix, b, d.buf[len(d.buf):])
	if cap(buf) > cap(d.buf)-len(d.buf) {
		// It outgrew the room: keep the larger buffer for the walk.
		d.buf = append(buf[:0], d.buf...)
	}
	return eq
}

// walkObjects compares two objects key by key, in key order. Members
// split here are appended to d.buf and dropped on return; deeper levels
// only append past them, so the slices below stay valid even when d.buf
// moves.
func (d *differ) walkObjects(a, b []byte, aObj, bObj bool, depth int) {
	start := len(d.buf)
	if aObj {
		d.buf = d.views[0].ix.objectMembers(a, d.buf)
	}
	mid := len(d.buf)
	if bObj {
		d.buf = d.views[1].ix.objectMembers(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	as, bs = sortMembers(as), sortMembers(bs)
	for i, j := 0, 0; i < len(as) || j < len(bs); {
		var key, x, y []byte
		switch c := compareKeys(as, bs, i, j); {
		case c < 0:
			key, x = as[i].Key, as[i].Value
			i++
		case c > 0:
			key, y = bs[j].Key, bs[j].Value
			j++
		default:
			key, x, y = as[i].Key, as[i].Value, bs[j].Value
			i++
			j++
		}
		if identical(x, y, depth+1) {
			continue
		}
		d.path = append(d.path, keyString(key))
		d.walk(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// compareKeys orders the next members of two sorted member lists, an
// exhausted list last.
func compareKeys(as, bs []rawMember, i, j int) int {
	switch {
	case j == len(bs):
		return -1
	case i == len(as):
		return 1
	}
	return bytes.Compare(as[i].Key, bs[j].Key)
}

// walkLists compares two lists index by index.
func (d *differ) walkLists(a, b []byte, aList, bList bool, depth int) {
	start := len(d.buf)
	if aList {
		d.buf = d.views[0].ix.arrayElements(a, d.buf)
	}
	mid := len(d.buf)
	if bList {
		d.buf = d.views[1].ix.arrayElements(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	for k := 0; k < max(len(as), len(bs)); k++ {
		var x, y []byte
		if k < len(as) {
			x = as[k].Value
		}
		if k < len(bs) {
			y = bs[k].Value
		}
		if identical(x, y, depth+1) {
			continue
		}
		d.path = append(d.path, strconv.Itoa(k))
		d.walk(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// keyString converts a key for the path, without allocating for the keys
// that make up the paths of most objects.
func keyString(k []byte) string {
	switch string(k) {
	case "metadata":
		return "metadata"
	case "spec":
		return "spec"
	case "status":
		return "status"
	case "template":
		return "template"
	case "containers":
		return "containers"
	case "labels":
		return "labels"
	case "annotations":
		return "annotations"
	case "managedFields":
		return "managedFields"
	case "resourceVersion":
		return "resourceVersion"
	case "generation":
		return "generation"
	case "image":
		return "image"
	case "replicas":
		return "replicas"
	case "data":
		return "data"
	}
	return string(k)
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
