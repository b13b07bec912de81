package object

// A rawScanner walks JSON text in place, one value, member or element at a
// time, so a caller can read the members it needs and pass over the rest.
// It reads strictly or lazily (see the package documentation), as it was
// made by newStrict or newLazy; the methods are the same.
//
// A method that returns false leaves the position undefined: the text is
// not of the form the caller reads, and the rawScanner is of no further use.
type rawScanner struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int
	strict   bool
}

// newStrict returns a rawScanner at the start of data that accepts only what
// encoding/json accepts, with containers nested at most maxDepth deep
// (at most maxNesting): a value it passes is valid JSON.
func newStrict(data []byte, maxDepth int) rawScanner {
	return rawScanner{data: data, maxDepth: min(maxDepth, maxNesting), strict: true}
}

// newLazy returns a rawScanner at the start of data that checks only the
// structure it walks: the objects and arrays it enters must be well
// formed at their own level, and the values and strings it passes must
// end, but what they hold is not looked at, and nesting is not bounded.
func newLazy(data []byte) rawScanner {
	return rawScanner{data: data}
}

// Pos returns the position: the index in the text of the next byte to
// read.
func (s *rawScanner) Pos() int { return s.pos }

// skipSpace moves past white space.
func (s *rawScanner) skipSpace() { s.pos = skipSpace(s.data, s.pos) }

// Peek moves past white space and returns the next byte, or 0 at the end.
func (s *rawScanner) Peek() byte {
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// Value moves past the next value: a strict rawScanner validates it and
// bounds its nesting, a lazy one only finds where it ends.
func (s *rawScanner) Value() bool {
	s.skipSpace()
	var end int
	var ok bool
	if s.strict {
		end, ok = validValue(s.data, s.pos, s.maxDepth-s.depth, nil)
	} else {
		end, ok = skipValue(s.data, s.pos)
	}
	s.pos = end
	return ok
}

// RawValue moves past the next value, as Value does, and returns its
// text.
func (s *rawScanner) RawValue() ([]byte, bool) {
	s.skipSpace()
	start := s.pos
	if !s.Value() {
		return nil, false
	}
	return s.data[start:s.pos], true
}

// StringValue moves past the next value, which must be a string, and
// returns it.
func (s *rawScanner) StringValue() (rawString, bool) {
	if s.Peek() != '"' {
		return rawString{}, false
	}
	start := s.pos
	if !s.strict {
		end, ok := skipString(s.data, start)
		s.pos = end
		if !ok {
			return rawString{}, false
		}
		return lazyString(s.data[start:end]), true
	}
	end, escaped, nonASCII, ok := scanString(s.data, start)
	s.pos = end
	return rawString{Raw: s.data[start:end], escaped: escaped, nonASCII: nonASCII}, ok
}

// OpenObject moves past the opening brace of the next value, which must
// be an object. rawMember then reads its members.
func (s *rawScanner) OpenObject() bool { return s.open('{') }

// OpenArray moves past the opening bracket of the next value, which must
// be an array. Element then reads its elements.
func (s *rawScanner) OpenArray() bool { return s.open('[') }

func (s *rawScanner) open(c byte) bool {
	if s.Peek() != c || (s.strict && s.depth >= s.maxDepth) {
		return false
	}
	s.pos++
	s.depth++
	return true
}

// rawMember moves to the next member of the object being read: it reads the
// comma before it (none before the first), its key and the colon, and
// leaves the position at the member's value, which the caller must read
// or pass with Value before asking for the next member. end is true, and
// the object closed, when there is no further member.
func (s *rawScanner) Member(first bool) (key rawString, end, ok bool) {
	if end, ok = s.next('}', first); end || !ok {
		return key, end, ok
	}
	if key, ok = s.StringValue(); !ok {
		return key, false, false
	}
	if s.Peek() != ':' {
		return key, false, false
	}
	s.pos++
	s.skipSpace()
	return key, false, true
}

// Element moves to the next element of the array being read, as rawMember
// does for objects, leaving the position at the element.
func (s *rawScanner) Element(first bool) (end, ok bool) {
	end, ok = s.next(']', first)
	s.skipSpace()
	return end, ok
}

// next reads what comes between two members or elements of a container
// that closes with c: the closing bracket (end), or a comma unless this
// is the first.
func (s *rawScanner) next(c byte, first bool) (end, ok bool) {
	switch s.Peek() {
	case c:
		s.pos++
		s.depth--
		return true, true
	case ',':
		if first {
			return false, false
		}
		s.pos++
		return false, true
	}
	return false, first
}

// End moves past white space and reports whether the data ends there.
func (s *rawScanner) End() bool {
	s.skipSpace()
	return s.pos == len(s.data)
}
