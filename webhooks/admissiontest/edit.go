package admissiontest

import "encoding/json"

// Obj returns a fresh copy of a JSON fixture, decoded, with edits
// applied: the rules' tests build their requests' objects from it.
func Obj(fixture string, edits ...func(o map[string]any)) map[string]any {
	var o map[string]any
	if err := json.Unmarshal([]byte(fixture), &o); err != nil {
		panic(err)
	}
	for _, e := range edits {
		e(o)
	}
	return o
}

// At returns the map at a path of keys, creating maps on the way.
func At(o map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := o[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			o[k] = next
		}
		o = next
	}
	return o
}

// Set is an edit that sets the value at a path of keys.
func Set(value any, keys ...string) func(map[string]any) {
	return func(o map[string]any) { At(o, keys[:len(keys)-1]...)[keys[len(keys)-1]] = value }
}

// Del is an edit that removes the member at a path of keys.
func Del(keys ...string) func(map[string]any) {
	return func(o map[string]any) { delete(At(o, keys[:len(keys)-1]...), keys[len(keys)-1]) }
}
