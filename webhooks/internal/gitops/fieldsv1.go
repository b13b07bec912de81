package gitops

import (
	"bytes"
	"slices"

	"github.com/stewardhq/steward/webhooks/object"
)

// A managedFields entry's fieldsV1 tree is walked in place, with the
// object view's JSON reader, by one walker: what the guards read of it
// (the keys Git's entries own, fields.go) and what the audit reads (the
// fields written outside Git, drift.go) differ only in what they do at
// each node.

// fieldsVisitor is told what walkFields finds in a fieldsV1 tree.
type fieldsVisitor interface {
	// enter is told each member key on the way down, "." aside; false
	// leaves the key's subtree out.
	enter(key []byte) bool
	// leave is told when the walk comes back up from the key entered
	// last.
	leave()
	// owned is told of a node the entry owns: as a whole (whole: a leaf,
	// an item owned as itself with nothing below, or a node at the walk's
	// depth), or as itself besides fields below it (an item's "." beside
	// its fields).
	owned(whole bool)
}

// walkFields walks the fieldsV1 tree below node, depth first, members in
// the order of their keys, reading it with members (object.Members, or a
// view's Members for a tree of the view's). Nodes maxDepth keys deep are
// owned as a whole; 0 is no bound.
func walkFields(node []byte, depth, maxDepth int, members func([]byte, []object.Member) []object.Member, v fieldsVisitor) {
	var buf [16]object.Member
	ms := members(node, buf[:0])
	self := slices.ContainsFunc(ms, func(m object.Member) bool { return string(m.Key) == "." })
	children := len(ms)
	if self {
		children--
	}
	if children == 0 || (maxDepth > 0 && depth >= maxDepth) {
		if depth > 0 || self {
			v.owned(true)
		}
		return
	}
	if self {
		v.owned(false)
	}
	slices.SortFunc(ms, func(a, b object.Member) int { return bytes.Compare(a.Key, b.Key) })
	for _, m := range ms {
		if string(m.Key) == "." || !v.enter(m.Key) {
			continue
		}
		walkFields(m.Value, depth+1, maxDepth, members, v)
		v.leave()
	}
}
