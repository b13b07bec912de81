package gitops

import (
	"encoding/json"
	"strconv"

	"github.com/stewardhq/steward/webhooks/object"
)

// A tool that applies client-side (Argo CD by default, through kubectl's
// apply) records its entry as an Update, and an Update that creates an
// object owns every field the API server then holds, the defaults it
// filled in (a Deployment's replicas, strategy, dnsPolicy...) among them.
// Argo CD's diff leaves those alone: it compares what Git declares, which
// its apply also keeps in kubectl's last-applied-configuration
// annotation. For such a tool (Owner.LastApplied), Git's fields are the
// ones the annotation holds, as long as the tool's entries are Updates; a
// tool that applies server-side records exactly Git's fields in its Apply
// entry, which is read as it is. The annotation is the tool's record, so a
// change of it counts as a change of Git's fields whoever makes it.

// LastAppliedAnnotation is kubectl's record of the manifest its
// client-side apply applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// lastAppliedPointer is the annotation's path.
var lastAppliedPointer = object.Pointer{"metadata", "annotations", LastAppliedAnnotation}

// lastAppliedDeclared are the fields the last-applied annotation of an
// object holds, read from its view v or, without one, from annotations;
// ok is false when it holds none.
func lastAppliedDeclared(v *object.View, annotations map[string]string) (declared, bool) {
	var manifest []byte
	if v != nil {
		manifest = lastAppliedOf(v)
	} else if doc, ok := annotations[LastAppliedAnnotation]; ok {
		manifest = []byte(doc)
	}
	tree, ok := lastAppliedTree(manifest)
	if !ok {
		return declared{}, false
	}
	return declared{trees: [][]byte{tree}, record: lastAppliedPointer}, true
}

// appliedServerSide reports whether one of managers' entries of the main
// resource is a server-side apply.
func appliedServerSide(entries []entry, managers []string) bool {
	for _, e := range entries {
		if e.of(managers) && string(e.Operation) == "Apply" {
			return true
		}
	}
	return false
}

// lastAppliedOf reads the annotation from an object view, as the
// manifest's JSON; nil when it is not set.
func lastAppliedOf(v *object.View) []byte {
	raw := v.Field(lastAppliedPointer...)
	var doc string
	if raw == nil || json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	return []byte(doc)
}

// lastAppliedTree turns a manifest into the fieldsV1 tree of the fields
// it sets, as an Apply entry of it would record them: a list's items by
// their name where they have one (the merge key of containers, env,
// volumes, ports with names...), by their value where they are scalars,
// by their index otherwise. ok is false for what is not a JSON object.
func lastAppliedTree(manifest []byte) ([]byte, bool) {
	if manifest == nil {
		return nil, false
	}
	var doc map[string]any
	if err := json.Unmarshal(manifest, &doc); err != nil {
		return nil, false
	}
	tree, err := json.Marshal(fieldsOf(doc))
	if err != nil {
		return nil, false
	}
	return tree, true
}

// fieldsOf is the fieldsV1 node of a manifest's value: members for an
// object's keys and a list's items, a leaf ({}) for a scalar.
func fieldsOf(v any) map[string]any {
	out := map[string]any{}
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			out["f:"+k] = fieldsOf(child)
		}
	case []any:
		for i, item := range v {
			out[itemKey(item, i)] = fieldsOf(item)
		}
	}
	return out
}

// itemKey is the fieldsV1 key of a list item.
func itemKey(item any, i int) string {
	switch it := item.(type) {
	case map[string]any:
		if name, ok := it["name"].(string); ok {
			key, err := json.Marshal(map[string]string{"name": name})
			if err == nil {
				return "k:" + string(key)
			}
		}
	case string, float64, bool:
		if raw, err := json.Marshal(it); err == nil {
			return "v:" + string(raw)
		}
	}
	return "i:" + strconv.Itoa(i)
}
