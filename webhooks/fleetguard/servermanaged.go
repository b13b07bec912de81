package fleetguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// maxDiffDepth bounds the structural diff's recursion. Below it, two
// subtrees are compared whole and a difference is reported at the deepest
// path reached, so arbitrarily nested input cannot exhaust the stack.
const maxDiffDepth = 64

// serverManaged are the paths an UPDATE may change without being a manual
// edit of the desired state: bookkeeping the API server, controllers or
// client tools maintain. Fleet's own drift detection ignores them as well.
var serverManaged = mustPointers(
	"/metadata/managedFields",
	"/metadata/resourceVersion",
	"/metadata/generation",
	"/metadata/uid",
	"/metadata/selfLink",
	"/metadata/creationTimestamp",
	"/metadata/deletionTimestamp",
	"/metadata/deletionGracePeriodSeconds",
	// Finalizers and owner references are how cleanup and garbage
	// collection work; an operator clearing a stuck finalizer must succeed.
	// (Adding an owner reference is refused on its own: see addedOwners.)
	"/metadata/finalizers",
	"/metadata/ownerReferences",
	// Observed state, written by controllers.
	"/status",
	// kubectl apply's bookkeeping: it records the last applied manifest and
	// changes nothing the object does; any real change sent along with it is
	// still reported.
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
)

func mustPointers(ss ...string) []pointer {
	ps := make([]pointer, len(ss))
	for i, s := range ss {
		p, err := parsePointer(s)
		if err != nil {
			panic(fmt.Sprintf("invalid built-in pointer %q: %v", s, err))
		}
		ps[i] = p
	}
	return ps
}

// decodeObject decodes a raw object into generic JSON values. Numbers stay
// json.Number so that integers beyond float64 precision still compare
// exactly.
func decodeObject(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("object is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("object is %s, not a JSON object", jsonType(v))
	}
	return m, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// changes is the result of a diff: the first few changed paths, in a
// stable order, and how many there are in total.
type changes struct {
	first []string
	total int
}

// differ computes which JSON paths differ between two objects. Maps are
// compared key by key and lists index by index, and a path at or under one
// of skip is not reported.
type differ struct {
	skip  []pointer
	limit int
	out   changes
	path  pointer
	// docs are the old and new object diffDocs compares, and buf holds
	// the members of the objects and lists in them it is comparing, as a
	// stack: each level appends its own and drops them when done.
	docs [2]*rawDoc
	buf  []member
}

// diff returns the paths that differ between a and b, ignoring every path
// at or under one of skip, keeping the first limit of them.
func diff(a, b any, skip []pointer, limit int) changes {
	d := differ{skip: skip, limit: limit, path: make(pointer, 0, 16)}
	d.walk(a, b, 0)
	return d.out
}

func (d *differ) report() {
	d.out.total++
	if len(d.out.first) < d.limit {
		d.out.first = append(d.out.first, d.path.String())
	}
}

// skipped reports whether the current path is at or under a skipped one.
func (d *differ) skipped() bool {
	for _, s := range d.skip {
		if d.path.hasPrefix(s) {
			return true
		}
	}
	return false
}

func (d *differ) walk(a, b any, depth int) {
	if d.skipped() || (isEmpty(a) && isEmpty(b)) {
		return
	}
	if depth >= maxDiffDepth {
		if !reflect.DeepEqual(a, b) {
			d.report()
		}
		return
	}
	// A missing value counts as an empty map or list, so an added or
	// removed subtree is reported leaf by leaf: every path can be pasted
	// into ignoredFields as it is, and ignored paths inside it still apply.
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	if (aMap || a == nil) && (bMap || b == nil) {
		d.walkMaps(am, bm, depth)
		return
	}
	al, aList := a.([]any)
	bl, bList := b.([]any)
	if (aList || a == nil) && (bList || b == nil) {
		d.walkLists(al, bl, depth)
		return
	}
	if aMap || bMap || aList || bList || a != b {
		// A type change, or two different scalars (strings, booleans,
		// json.Numbers; none of them is a map or a list here, so == is safe).
		d.report()
	}
}

func (d *differ) walkMaps(a, b map[string]any, depth int) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		d.path = append(d.path, k)
		d.walk(a[k], b[k], depth+1)
		d.path = d.path[:len(d.path)-1]
	}
}

func (d *differ) walkLists(a, b []any, depth int) {
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		var x, y any
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		d.path = append(d.path, strconv.Itoa(i))
		d.walk(x, y, depth+1)
		d.path = d.path[:len(d.path)-1]
	}
}

// isEmpty treats a missing value, null, {} and [] alike: the API server
// omits empty fields, so their presence alone is no change.
func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}
