package object

// A rawMember is one member of a JSON object (its key, unescaped, and its
// value as written) or one element of an array (its value only). Both are
// slices of the text, or for a key that needed unescaping, of a copy.
type rawMember struct {
	Key, Value []byte
}

// objectMembers appends the members of the object data to buf, in the order
// written, and returns the extended buf. It reads lazily: data should be
// an object validJSON accepted, and of anything else it returns the members
// that come before the first fault.
func objectMembers(data []byte, buf []rawMember) []rawMember {
	return splitObject(data, nested{}, buf)
}

// arrayElements appends the elements of the array data to buf, in order,
// and returns the extended buf; it reads as objectMembers does.
func arrayElements(data []byte, buf []rawMember) []rawMember {
	return splitArray(data, nested{}, buf)
}

// splitObject is objectMembers, passing the containers n holds in one step.
func splitObject(data []byte, n nested, buf []rawMember) []rawMember {
	s := newLazy(data)
	if !s.OpenObject() {
		return buf
	}
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if end || !ok {
			return buf
		}
		start := s.pos
		if !n.value(&s) {
			return buf
		}
		buf = append(buf, rawMember{Key: key.Bytes(), Value: data[start:s.pos]})
	}
}

// splitArray is arrayElements, passing the containers n holds in one step.
func splitArray(data []byte, n nested, buf []rawMember) []rawMember {
	s := newLazy(data)
	if !s.OpenArray() {
		return buf
	}
	for first := true; ; first = false {
		end, ok := s.Element(first)
		if end || !ok {
			return buf
		}
		start := s.pos
		if !n.value(&s) {
			return buf
		}
		buf = append(buf, rawMember{Value: data[start:s.pos]})
	}
}
