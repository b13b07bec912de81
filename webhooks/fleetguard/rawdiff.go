package fleetguard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// Updates are judged on raw members (rawjson reads them in place) so that
// only the parts that differ are ever decoded; managedFields and status,
// most of an object's bytes, never are.

// A member is one member of a JSON object or one element of a list, as
// rawjson splits them.
type member = rawjson.Member

// maxLazyDepth is how deep diffDocs follows objects and lists member by
// member before it decodes the differing subtrees whole. It bounds the
// recursion; Kubernetes objects rarely nest deeper.
const maxLazyDepth = 16

// diffDocs is diff over raw JSON: the same paths, in the same order, with
// the same total, for two values read into rawDocs. Members whose text is
// identical are skipped unread (identical text decodes to identical
// values, so the structural diff finds nothing in them either); skipped
// paths are never read; only differing subtrees are decoded, down to
// their differing members. When the text differs the structural
// comparison decides, so the outcome never depends on formatting.
func diffDocs(a, b *rawDoc, skip []pointer, limit int) changes {
	// The members of the levels the diff descends to, about 60 for an
	// image change of a Deployment.
	buf := make([]member, 0, 64)
	d := differ{skip: skip, limit: limit, path: make(pointer, 0, 16), docs: [2]*rawDoc{a, b}, buf: buf}
	d.walkRaw(a.raw, b.raw, 0)
	return d.out
}

// Kinds of raw values; a missing value (nil) counts as null, as in walk.
const (
	rawNull = iota
	rawObject
	rawList
	rawScalar
)

func rawKind(v []byte) int {
	if len(v) == 0 {
		return rawNull
	}
	switch v[0] {
	case 'n':
		return rawNull
	case '{':
		return rawObject
	case '[':
		return rawList
	}
	return rawScalar
}

// walkRaw mirrors walk: a and b are raw values, nil when missing.
func (d *differ) walkRaw(a, b []byte, depth int) {
	if bytes.Equal(a, b) || d.skipped() {
		return
	}
	ka, kb := rawKind(a), rawKind(b)
	if depth < maxLazyDepth {
		switch {
		case (ka == rawObject || ka == rawNull) && (kb == rawObject || kb == rawNull):
			d.walkRawObjects(a, b, ka == rawObject, kb == rawObject, depth)
			return
		case (ka == rawList || ka == rawNull) && (kb == rawList || kb == rawNull):
			d.walkRawLists(a, b, ka == rawList, kb == rawList, depth)
			return
		}
	}
	d.walk(decodeRaw(a), decodeRaw(b), depth)
}

// walkRawObjects mirrors walkMaps. Members split here are appended to
// d.buf and dropped on return; deeper levels only append past them, so
// the slices below stay valid even when d.buf moves.
func (d *differ) walkRawObjects(a, b []byte, aObj, bObj bool, depth int) {
	start := len(d.buf)
	if aObj {
		d.buf = d.docs[0].ix.SplitObject(a, d.buf)
	}
	mid := len(d.buf)
	if bObj {
		d.buf = d.docs[1].ix.SplitObject(b, d.buf)
	}
	as, bs := d.buf[start:mid], d.buf[mid:]
	as, bs = as[:sortMembers(as)], bs[:sortMembers(bs)]
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
		if bytes.Equal(x, y) {
			continue
		}
		d.path = append(d.path, keyString(key))
		d.walkRaw(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// compareKeys orders the next members of two sorted member lists, an
// exhausted list last.
func compareKeys(as, bs []member, i, j int) int {
	switch {
	case j == len(bs):
		return -1
	case i == len(as):
		return 1
	}
	return bytes.Compare(as[i].Key, bs[j].Key)
}

// walkRawLists mirrors walkLists.
func (d *differ) walkRawLists(a, b []byte, aList, bList bool, depth int) {
	start := len(d.buf)
	if aList {
		d.buf = d.docs[0].ix.SplitArray(a, d.buf)
	}
	mid := len(d.buf)
	if bList {
		d.buf = d.docs[1].ix.SplitArray(b, d.buf)
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
		if bytes.Equal(x, y) {
			continue
		}
		d.path = append(d.path, strconv.Itoa(k))
		d.walkRaw(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
	d.buf = d.buf[:start]
}

// sortMembers sorts an object's members by key and drops all but the last
// of each key, as decoding into a map does; it returns how many remain,
// at the front of ms.
func sortMembers(ms []member) int {
	if len(ms) < 2 {
		return len(ms)
	}
	byKey := func(x, y member) int { return bytes.Compare(x.Key, y.Key) }
	if !slices.IsSortedFunc(ms, byKey) {
		slices.SortStableFunc(ms, byKey)
	}
	n := 0
	for k := range ms {
		if k+1 < len(ms) && bytes.Equal(ms[k].Key, ms[k+1].Key) {
			continue // a later member has the same key
		}
		ms[n] = ms[k]
		n++
	}
	return n
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

// decodeRaw decodes a raw value as decodeObject would decode it in place:
// nil for a missing value, json.Number for numbers. Strings and other
// scalars need no decoder.
func decodeRaw(v []byte) any {
	if len(v) == 0 {
		return nil
	}
	switch v[0] {
	case 'n':
		return nil
	case 't':
		return true
	case 'f':
		return false
	case '"':
		return string(rawjson.Unquote(v))
	case '{', '[':
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var out any
		if err := dec.Decode(&out); err != nil {
			return nil // unreachable for validated input
		}
		return out
	}
	return json.Number(v)
}
