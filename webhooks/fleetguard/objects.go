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
	// oldObj and newObj are set only when the objects were decoded.
	oldObj, newObj map[string]any
}

func readObjects(oldRaw, newRaw []byte) (objects, error) {
	var o objects
	if o.old.read(oldRaw) && o.new.read(newRaw) {
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
	return diffDocs(&o.old, &o.new, skip, limit)
}

// maxScanDepth bounds the nesting a rawDoc accepts. Deeper documents take
// the decoding path, which reports them as encoding/json does (its own
// limit is 10000).
const maxScanDepth = 512

// A rawDoc is a JSON object validated and indexed in one pass
// (rawjson.Index), so that the ownership checks and the diff split any
// object or list in it reading only that object's or list's own members:
// the bytes of an update's objects are read once, and then only at the
// levels the diff descends to.
type rawDoc struct {
	// raw is the object without surrounding white space.
	raw []byte
	ix  rawjson.Index
}

// read reports whether raw is a valid JSON object, which metaFromDoc and
// diffDocs may read, and makes d of it. Anything else takes the decoding
// path, which words the error.
func (d *rawDoc) read(raw []byte) bool {
	i := rawjson.SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' || !d.ix.Valid(raw, maxScanDepth) {
		return false
	}
	d.raw = rawjson.TrimSpace(raw)
	return true
}
