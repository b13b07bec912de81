package fleetguard

// maxDiffDepth bounds how deep the diff descends. Below it, two subtrees
// are compared whole and a difference is reported at the deepest path
// reached, so arbitrarily nested input cannot make the paths, or the
// recursion, arbitrarily long.
const maxDiffDepth = 64

// changes is the result of a diff: the first few changed paths, in a
// stable order, and how many there are in total.
type changes struct {
	first []string
	total int
}

// differ computes which JSON paths differ between two objects. Objects
// are compared key by key and lists index by index, and a path at or
// under one of skip is not reported.
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

// diffDocs returns the paths that differ between two objects, ignoring
// every path at or under one of skip, keeping the first limit of them.
// The paths are those a structural comparison of the decoded objects
// finds, in key and index order, so the outcome never depends on
// formatting; a missing value, null, {} and [] count alike.
func diffDocs(a, b *rawDoc, skip []pointer, limit int) changes {
	// The members of the levels the diff descends to, about 60 for an
	// image change of a Deployment.
	buf := make([]member, 0, 64)
	d := differ{skip: skip, limit: limit, path: make(pointer, 0, 16), docs: [2]*rawDoc{a, b}, buf: buf}
	d.walkRaw(a.raw, b.raw, 0)
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
