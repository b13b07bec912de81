package apimigration

import (
	"strings"

	jsonpatch "gomodules.xyz/jsonpatch/v2"
)

// annotationsPath is the JSON pointer to metadata.annotations.
const annotationsPath = "/metadata/annotations"

// annotationPaths are the JSON pointers (RFC 6901: "~" is written "~0"
// and "/" "~1") to each annotation the rule writes.
var annotationPaths = func() map[string]string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	m := map[string]string{}
	for _, k := range annotationKeys {
		m[k] = annotationsPath + "/" + esc.Replace(k)
	}
	return m
}()

// annotationPatch is the JSON patch that sets the annotations in set on o,
// as decoded by decodeFast: one "add" of the whole map when the object has
// no annotations, otherwise an "add" for each new key and a "replace" for
// each existing one. These are the operations a diff of the object's
// metadata before and after would produce, written out directly. ok is
// false for a key the rule does not write, which plan never asks for.
func annotationPatch(o *object, set map[string]string) (ops []jsonpatch.JsonPatchOperation, ok bool) {
	if !o.hasAnnotations {
		all := make(map[string]any, len(set))
		for k, v := range set {
			all[k] = v
		}
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: annotationsPath, Value: all}}, true
	}
	ops = make([]jsonpatch.JsonPatchOperation, 0, len(set))
	for _, k := range annotationKeys {
		v, ok := set[k]
		if !ok {
			continue
		}
		op := "add"
		if _, exists := o.Metadata.Annotations[k]; exists {
			op = "replace"
		}
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: op, Path: annotationPaths[k], Value: v})
	}
	return ops, len(ops) == len(set)
}
