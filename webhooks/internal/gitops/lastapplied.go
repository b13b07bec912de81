package gitops

import (
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
// ok is false when it holds none. The manifest is read in place, as the
// entries' trees are.
func lastAppliedDeclared(v *object.View, annotations map[string]string) (declared, bool) {
	var manifest []byte
	if v != nil {
		if raw := v.Field(lastAppliedPointer...); raw != nil {
			manifest = []byte(object.Text(raw))
		}
	} else if doc, ok := annotations[LastAppliedAnnotation]; ok {
		manifest = []byte(doc)
	}
	// Not a JSON object, or broken before its first member: no record.
	// (A manifest broken later reads as its members before the fault.)
	var buf [1]object.Member
	if len(object.Members(manifest, buf[:0])) == 0 {
		return declared{}, false
	}
	return declared{manifest: manifest, record: lastAppliedPointer}, true
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

// ownsInManifest follows p through a manifest: members by their keys, a
// list's items as the object v's item at that index is known, by its
// name where it has one, by its value where it is a scalar, by its index
// otherwise. Reaching the end of p, or a scalar of the manifest on the
// way (a value set as a whole), means Git sets the field.
func ownsInManifest(manifest []byte, v *object.View, p object.Pointer) bool {
	var buf [32]object.Member
	node := manifest
	for i, tok := range p {
		if members := object.Members(node, buf[:0]); len(members) > 0 {
			next, found := []byte(nil), false
			for _, m := range members {
				if string(m.Key) == tok {
					next, found = m.Value, true // the last of repeated keys wins
				}
			}
			if !found {
				return false
			}
			node = next
			continue
		}
		items := object.Elements(node, buf[:0])
		if len(items) == 0 {
			return isScalar(node) // a value set as a whole, or an empty list or object
		}
		item, ok := manifestItem(items, listItem(v, p[:i], tok), tok)
		if !ok {
			return false
		}
		node = item
	}
	return true
}

// manifestItem finds the manifest's item that is the object's item live
// (at index tok): the one of its name, the same scalar, or the one at its
// index.
func manifestItem(items []object.Member, live []byte, tok string) ([]byte, bool) {
	if live != nil {
		if name := memberText(live, "name"); name != "" {
			for _, it := range items {
				if memberText(it.Value, "name") == name {
					return it.Value, true
				}
			}
			return nil, false
		}
		if isScalar(live) {
			for _, it := range items {
				if object.SameScalar(it.Value, live) {
					return it.Value, true
				}
			}
			return nil, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || !isIndex(tok) || i >= len(items) {
		return nil, false
	}
	return items[i].Value, true
}

// memberText is the text of the string member key of the JSON object raw,
// "" when it has none.
func memberText(raw []byte, key string) string {
	var buf [32]object.Member
	for _, m := range object.Members(raw, buf[:0]) {
		if string(m.Key) == key {
			return object.Text(m.Value)
		}
	}
	return ""
}

// isScalar reports whether raw is a JSON scalar: not an object or a list.
func isScalar(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return false
		}
		return true
	}
	return false
}
