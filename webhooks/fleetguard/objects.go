package fleetguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stewardhq/steward/webhooks/internal/rawjson"
)

// objects are the old and new object of an update, each validated and
// indexed in one pass; the ownership checks and the diff read only the
// levels they descend to.
type objects struct {
	old, new rawDoc
}

func readObjects(oldRaw, newRaw []byte) (objects, error) {
	var o objects
	if err := o.old.read(oldRaw); err != nil {
		return objects{}, fmt.Errorf("old object: %w", err)
	}
	if err := o.new.read(newRaw); err != nil {
		return objects{}, fmt.Errorf("new object: %w", err)
	}
	return o, nil
}

// meta returns the metadata the ownership checks read.
func (o *objects) meta() (objectMeta, objectMeta) {
	return metaFromDoc(&o.old), metaFromDoc(&o.new)
}

// diff returns the changed paths not under skip.
func (o *objects) diff(skip []pointer, limit int) changes {
	return diffDocs(&o.old, &o.new, skip, limit)
}

// maxScanDepth bounds the nesting a rawDoc accepts: encoding/json's own
// limit, so that every object a JSON decoder would read is read here.
const maxScanDepth = rawjson.MaxDepth

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

// read makes d of raw when raw is a JSON object, or returns why it is
// not. It reads what a JSON decoder reading one value from raw reads: the
// object that starts it, whatever follows (the API server sends nothing
// after it).
func (d *rawDoc) read(raw []byte) error {
	if d.index(raw) {
		return nil
	}
	if s := rawjson.NewStrict(raw, maxScanDepth); s.Peek() == '{' && s.Value() && d.index(raw[:s.Pos()]) {
		return nil
	}
	return objectError(raw)
}

// index makes d of raw when raw is exactly one JSON object, with nothing
// but white space around it.
func (d *rawDoc) index(raw []byte) bool {
	i := rawjson.SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' || !d.ix.Valid(raw, maxScanDepth) {
		return false
	}
	d.raw = rawjson.TrimSpace(raw)
	return true
}

// objectError words why raw is not a JSON object as encoding/json's
// decoder does: Steward's error messages, and so its answers, have always
// been worded by it, and syntax errors are best located by it.
func objectError(raw []byte) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("object is empty")
	}
	var v json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&v); err != nil {
		return fmt.Errorf("decoding object: %w", err)
	}
	v = rawjson.TrimSpace(v)
	if rawKind(v) == rawObject {
		// Unreachable: rawDoc.read reads every object a decoder reads,
		// which FuzzRawMatchesMapDiff holds it to.
		return errors.New("decoding object: the object could not be read")
	}
	return fmt.Errorf("object is %s, not a JSON object", describeKind(v))
}

// describeKind names the type of a JSON value that is not an object, as
// error messages do.
func describeKind(v []byte) string {
	switch v[0] {
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
