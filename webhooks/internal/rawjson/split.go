package rawjson

// A Member is one member of a JSON object (its key, unescaped, and its
// value as written) or one element of an array (its value only). Both are
// slices of the text, or for a key that needed unescaping, of a copy.
type Member struct {
	Key, Value []byte
}

// SplitObject appends the members of the object data to buf, in the order
// written, and returns the extended buf. It reads lazily: data should be
// an object Valid accepted, and of anything else it returns the members
// that come before the first fault.
func SplitObject(data []byte, buf []Member) []Member {
	return splitObject(data, nested{}, buf)
}

// SplitArray appends the elements of the array data to buf, in order,
// and returns the extended buf; it reads as SplitObject does.
func SplitArray(data []byte, buf []Member) []Member {
	return splitArray(data, nested{}, buf)
}

// splitObject is SplitObject, passing the containers n holds in one step.
func splitObject(data []byte, n nested, buf []Member) []Member {
	s := NewLazy(data)
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
		buf = append(buf, Member{Key: key.Bytes(), Value: data[start:s.pos]})
	}
}

// splitArray is SplitArray, passing the containers n holds in one step.
func splitArray(data []byte, n nested, buf []Member) []Member {
	s := NewLazy(data)
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
		buf = append(buf, Member{Value: data[start:s.pos]})
	}
}
