package object

import "bytes"

// Equal reports whether a and b hold equal values at path (object keys
// from the top; none compares the whole objects), as reflect.DeepEqual
// compares what encoding/json decodes with UseNumber: key order, escaping
// and white space do not matter, number text does, and the last of
// repeated keys wins. A missing value equals only a missing one or null.
// Identical text is equal unread; otherwise both values are compared
// through their objects' indexes, reading each byte about once.
func Equal(a, b *View, path ...string) bool {
	x, y := a.Field(path...), b.Field(path...)
	if bytes.Equal(x, y) {
		return true
	}
	eq, buf := equalJSON(&a.ix, x, &b.ix, y, a.borrow())
	a.giveBack(buf)
	return eq
}
