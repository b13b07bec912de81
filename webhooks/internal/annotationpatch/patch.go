// Package annotationpatch writes the JSON patch that sets a mutating
// rule's own annotations and touches nothing else. Patching only these
// keys, rather than diffing a re-encoded object, costs the same for an
// object with megabytes of spec as for an empty one, and cannot alter
// other fields.
package annotationpatch

import (
	jsonpatch "gomodules.xyz/jsonpatch/v2"

	"github.com/stewardhq/steward/webhooks/object"
)

// annotationsPath is the JSON pointer to metadata.annotations.
const annotationsPath = "/metadata/annotations"

// Options say how a rule's patches are written; each rule keeps the
// operations it has always sent.
type Options struct {
	// Replace writes "replace" for a key the object already has; without
	// it, "add", which JSON patch also lets overwrite a member.
	Replace bool
	// Remove removes the rule's keys that the wanted annotations lack;
	// without it, they are left alone.
	Remove bool
}

// A Patcher writes patches for a fixed list of annotation keys, the ones
// a rule owns, with their JSON pointers escaped once.
type Patcher struct {
	opts  Options
	keys  []string
	paths []string
}

// New returns a Patcher for the keys, whose operations come in the order
// of keys.
func New(opts Options, keys ...string) *Patcher {
	p := &Patcher{opts: opts, keys: keys, paths: make([]string, len(keys))}
	for i, k := range keys {
		p.paths[i] = annotationsPath + "/" + object.EscapeToken(k)
	}
	return p
}

// Ops returns the operations that give the object's annotations, have,
// the values in want for the Patcher's keys (and, with Remove, drop those
// of its keys that want lacks). present says whether the object has an
// annotations object at all (it may be empty): without one, a single
// "add" writes want whole. Keys whose value is already right get no
// operation.
func (p *Patcher) Ops(have map[string]string, present bool, want map[string]string) []jsonpatch.JsonPatchOperation {
	if !present {
		if len(want) == 0 {
			return nil
		}
		all := make(map[string]any, len(want))
		for k, v := range want {
			all[k] = v
		}
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: annotationsPath, Value: all}}
	}
	var ops []jsonpatch.JsonPatchOperation
	emit := func(op string, i int, value any) {
		if ops == nil {
			ops = make([]jsonpatch.JsonPatchOperation, 0, len(p.keys)) // one allocation, only when needed
		}
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: op, Path: p.paths[i], Value: value})
	}
	for i, k := range p.keys {
		v, has := have[k]
		w, wanted := want[k]
		switch {
		case wanted && !has:
			emit("add", i, w)
		case wanted && v != w && p.opts.Replace:
			emit("replace", i, w)
		case wanted && v != w:
			emit("add", i, w)
		case !wanted && has && p.opts.Remove:
			emit("remove", i, nil)
		}
	}
	return ops
}
