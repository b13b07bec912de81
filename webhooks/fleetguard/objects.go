package fleetguard

import (
	"fmt"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// objects are the old and new object of an update, read the cheap way
// when both are valid JSON objects (always, from the API server), and
// decoded whole otherwise, so that odd input is judged, and its errors
// worded, exactly as before.
type objects struct {
	old, new rawDoc
	// spare is room for the members the diff splits further.
	spare []member
	// oldObj and newObj are set only when the objects were decoded.
	oldObj, newObj map[string]any
}

func readObjects(oldRaw, newRaw []byte) (objects, error) {
	if isObject(oldRaw) && isObject(newRaw) {
		// One buffer holds the members of both objects' top levels and
		// metadata (about 20 for a Deployment) and what the diff splits
		// below them.
		buf := make([]member, 0, 64)
		var o objects
		o.old, buf = splitDoc(oldRaw, buf)
		o.new, o.spare = splitDoc(newRaw, buf)
		return o, nil
	}
	oldObj, err := decodeObject(oldRaw)
	if err != nil {
		return objects{}, fmt.Errorf("old object: %w", err)
	}
	newObj, err := decodeObject(newRaw)
	if err != nil {
		return objects{}, fmt.Errorf("new object: %w", err)
	}
	return objects{oldObj: oldObj, newObj: newObj}, nil
}

// meta returns the metadata the ownership checks read.
func (o *objects) meta() (objectMeta, objectMeta) {
	if o.oldObj != nil {
		return metaFromMap(o.oldObj), metaFromMap(o.newObj)
	}
	return metaFromDoc(&o.old), metaFromDoc(&o.new)
}

// diff returns the changed paths not under skip.
func (o *objects) diff(skip []pointer, limit int) changes {
	if o.oldObj != nil {
		return diff(o.oldObj, o.newObj, skip, limit)
	}
	return diffDocs(&o.old, &o.new, skip, limit, o.spare)
}

// A rawDoc is an object isObject accepted, with its top level and its
// metadata split into members, in document order, so that the ownership
// checks and the diff both read them without splitting them again.
type rawDoc struct {
	// raw is the object without surrounding whitespace, meta the value of
	// its metadata member when that is an object.
	raw, meta []byte
	// top and metaMembers are their members.
	top, metaMembers []member
}

// splitDoc splits raw, appending the members to buf, and returns what is
// left of buf for further members.
func splitDoc(raw []byte, buf []member) (rawDoc, []member) {
	d := rawDoc{raw: rawjson.TrimSpace(raw)}
	start := len(buf)
	buf = rawjson.SplitObject(d.raw, buf)
	mid := len(buf)
	if md := lastMember(buf[start:mid], "metadata"); rawKind(md) == rawObject {
		d.meta = md
		buf = rawjson.SplitObject(md, buf)
	}
	end := len(buf)
	d.top, d.metaMembers = buf[start:mid:mid], buf[mid:end:end]
	return d, buf[end:end]
}
