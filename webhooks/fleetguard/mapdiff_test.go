package fleetguard

// The map-based reading of an update: both objects decoded whole into
// generic values, then compared. It was fleetguard's first implementation
// and costs about eight times the raw reading (1,350 allocations and
// 105 KB per update of a Deployment), so it lives here only as the oracle
// FuzzRawMatchesMapDiff holds the raw reading to.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// mapUpdate is an update's objects decoded whole.
type mapUpdate struct {
	old, new map[string]any
}

// readMapObjects is readObjects by decoding.
func readMapObjects(oldRaw, newRaw []byte) (mapUpdate, error) {
	old, err := decodeObject(oldRaw)
	if err != nil {
		return mapUpdate{}, fmt.Errorf("old object: %w", err)
	}
	cur, err := decodeObject(newRaw)
	if err != nil {
		return mapUpdate{}, fmt.Errorf("new object: %w", err)
	}
	return mapUpdate{old: old, new: cur}, nil
}

func (u mapUpdate) meta() (objectMeta, objectMeta) { return metaFromMap(u.old), metaFromMap(u.new) }

func (u mapUpdate) diff(skip []pointer, limit int) changes { return diff(u.old, u.new, skip, limit) }

// addedOwners is objects.addedOwners of the decoded objects: their owner
// references are encoded again and read as the raw ones are.
func (u mapUpdate) addedOwners() []ownerRef {
	return addedOwners(ownersFromMap(u.old), ownersFromMap(u.new))
}

func ownersFromMap(obj map[string]any) []byte {
	md, _ := obj["metadata"].(map[string]any)
	v, ok := md["ownerReferences"]
	if !ok {
		return nil
	}
	raw, _ := json.Marshal(v)
	return raw
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

// diff is the structural diff of two decoded values that diffDocs must
// match: the same paths, in the same order, with the same total.
func diff(a, b any, skip []pointer, limit int) changes {
	d := differ{skip: skip, limit: limit, path: make(pointer, 0, 16)}
	d.walk(a, b, 0)
	return d.out
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

// metaFromMap reads the metadata of an object already decoded into
// generic values; fields of an unexpected type count as absent.
func metaFromMap(obj map[string]any) objectMeta {
	md, _ := obj["metadata"].(map[string]any)
	str := func(k string) string { s, _ := md[k].(string); return s }
	return objectMeta{
		Name:         str("name"),
		GenerateName: str("generateName"),
		Namespace:    str("namespace"),
		Labels:       stringMap(md["labels"]),
		Annotations:  stringMap(md["annotations"]),
	}
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
