package object

// The map-based reading of objects: decoded whole into generic values,
// then read and compared. It was fleetguard's first implementation and
// costs about eight times a View (1,350 allocations and 105 KB per update
// of a Deployment), so it lives here only as the oracle the fuzz targets
// hold Views to (view_fuzz_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

// mapDiff is the structural diff of two decoded values that Diff must
// match: the same paths, in the same order, with the same total.
func mapDiff(a, b any, skip []Pointer, limit int) Changes {
	d := mapDiffer{differ: differ{skip: skip, limit: limit, path: make(Pointer, 0, 16)}}
	d.walk(a, b, 0)
	return d.out
}

func (d *mapDiffer) walk(a, b any, depth int) {
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

func (d *mapDiffer) walkMaps(a, b map[string]any, depth int) {
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

func (d *mapDiffer) walkLists(a, b []any, depth int) {
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

// mapDiffer is a differ that walks decoded values.
type mapDiffer struct{ differ }

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

// mapMeta is what a View reads of metadata, read from an object already
// decoded into generic values; fields of an unexpected type count as
// absent.
type mapMeta struct {
	Name, GenerateName, Namespace, UID string
	Deleting                           bool
	Labels, Annotations                map[string]string
	HasAnnotations                     bool
}

func metaFromMap(obj map[string]any) mapMeta {
	md, _ := obj["metadata"].(map[string]any)
	str := func(k string) string { s, _ := md[k].(string); return s }
	_, hasAnnotations := md["annotations"].(map[string]any)
	return mapMeta{
		Name:           str("name"),
		GenerateName:   str("generateName"),
		Namespace:      str("namespace"),
		UID:            str("uid"),
		Deleting:       md["deletionTimestamp"] != nil,
		Labels:         stringMapOf(md["labels"]),
		Annotations:    stringMapOf(md["annotations"]),
		HasAnnotations: hasAnnotations,
	}
}

// metaOfView is mapMeta as a View reads it.
func metaOfView(v *View) mapMeta {
	return mapMeta{
		Name:           v.Name(),
		GenerateName:   v.GenerateName(),
		Namespace:      v.Namespace(),
		UID:            v.UID(),
		Deleting:       v.Deleting(),
		Labels:         v.Labels(),
		Annotations:    v.Annotations(),
		HasAnnotations: v.HasAnnotations(),
	}
}

// ownersFromMap is OwnerReferences of a decoded object: encoded again and
// decoded as a View decodes them.
func ownersFromMap(obj map[string]any) []metav1.OwnerReference {
	md, _ := obj["metadata"].(map[string]any)
	l, ok := md["ownerReferences"].([]any)
	if !ok {
		return nil
	}
	raw, _ := json.Marshal(l)
	var refs []metav1.OwnerReference
	_ = json.Unmarshal(raw, &refs)
	return refs
}

func stringMapOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	var out map[string]string
	for k, v := range m {
		if s, ok := v.(string); ok {
			if out == nil {
				out = make(map[string]string, len(m))
			}
			out[k] = s
		}
	}
	return out
}
