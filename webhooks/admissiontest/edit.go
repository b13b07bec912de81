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

// AppliedBy is an edit that records the object as the named field
// managers applied it: one managedFields entry each, owning every field
// the object has at that point (but metadata bookkeeping and status), as
// a GitOps tool's entry does when Git declares the whole object. List
// items with a name are owned by it ("k:{"name":...}"), as server-side
// apply keys containers, and other lists as a whole.
func AppliedBy(operation string, managers ...string) func(map[string]any) {
	return func(o map[string]any) {
		fields := fieldsOf(o, true)
		entries, _ := At(o, "metadata")["managedFields"].([]any)
		for _, m := range managers {
			entries = append(entries, map[string]any{
				"manager": m, "operation": operation, "apiVersion": o["apiVersion"], "time": "2026-01-12T09:30:00Z",
				"fieldsType": "FieldsV1", "fieldsV1": fields,
			})
		}
		At(o, "metadata")["managedFields"] = entries
	}
}

// bookkeeping are the members of an object no apply owns.
var bookkeeping = map[string]bool{
	"managedFields": true, "resourceVersion": true, "uid": true, "generation": true, "creationTimestamp": true,
	"selfLink": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true, "status": true,
}

// fieldsOf is the fieldsV1 tree of a value's fields.
func fieldsOf(v any, top bool) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if (top && (k == "status" || k == "apiVersion" || k == "kind")) || (!top && bookkeeping[k] && k != "status") {
				continue
			}
			out["f:"+k] = fieldsOf(c, false)
		}
	case []any:
		for _, item := range x {
			m, ok := item.(map[string]any)
			name, named := m["name"].(string)
			if !ok || !named {
				return map[string]any{} // owned as a whole
			}
			key, _ := json.Marshal(map[string]string{"name": name})
			sub := fieldsOf(m, false)
			sub["."] = map[string]any{}
			out["k:"+string(key)] = sub
		}
	}
	return out
}

// Applied is a JSON fixture with AppliedBy's entries.
func Applied(fixture, operation string, managers ...string) string {
	b, err := json.Marshal(Obj(fixture, AppliedBy(operation, managers...)))
	if err != nil {
		panic(err)
	}
	return string(b)
}
