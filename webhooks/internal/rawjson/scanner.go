package rawjson

// A Scanner walks JSON text in place, one value, member or element at a
// time, so a caller can read the members it needs and pass over the rest.
// It reads strictly or lazily (see the package documentation), as it was
// made by NewStrict or NewLazy; the methods are the same.
//
// A method that returns false leaves the position undefined: the text is
// not of the form the caller reads, and the Scanner is of no further use.
type Scanner struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int
	strict   bool
}

// NewStrict returns a Scanner at the start of data that accepts only what
// encoding/json accepts, with containers nested at most maxDepth deep
// (at most MaxDepth): a value it passes is valid JSON.
func NewStrict(data []byte, maxDepth int) Scanner {
	return Scanner{data: data, maxDepth: min(maxDepth, MaxDepth), strict: true}
}

// NewLazy returns a Scanner at the start of data that checks only the
// structure it walks: the objects and arrays it enters must be well
// formed at their own level, and the values and strings it passes must
// end, but what they hold is not looked at, and nesting is not bounded.
func NewLazy(data []byte) Scanner {
	return Scanner{data: data}
}

// Pos returns the position: the index in the text of the next byte to
// read.
func (s *Scanner) Pos() int { return s.pos }

// SkipSpace moves past white space.
func (s *Scanner) SkipSpace() { s.pos = SkipSpace(s.data, s.pos) }

// Peek moves past white space and returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.SkipSpace()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// Value moves past the next value: a strict Scanner validates it and
// bounds its nesting, a lazy one only finds where it ends.
func (s *Scanner) Value() bool {
	s.SkipSpace()
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
func (s *Scanner) RawValue() ([]byte, bool) {
	s.SkipSpace()
	start := s.pos
	if !s.Value() {
		return nil, false
	}
	return s.data[start:s.pos], true
}

// StringValue moves past the next value, which must be a string, and
// returns it.
func (s *Scanner) StringValue() (String, bool) {
	if s.Peek() != '"' {
		return String{}, false
	}
	start := s.pos
	if !s.strict {
		end, ok := skipString(s.data, start)
		s.pos = end
		if !ok {
			return String{}, false
		}
		return lazyString(s.data[start:end]), true
	}
	end, escaped, nonASCII, ok := scanString(s.data, start)
	s.pos = end
	return String{Raw: s.data[start:end], escaped: escaped, nonASCII: nonASCII}, ok
}

// OpenObject moves past the opening brace of the next value, which must
// be an object. Member then reads its members.
func (s *Scanner) OpenObject() bool { return s.open('{') }

// OpenArray moves past the opening bracket of the next value, which must
// be an array. Element then reads its elements.
func (s *Scanner) OpenArray() bool { return s.open('[') }

func (s *Scanner) open(c byte) bool {
	if s.Peek() != c || (s.strict && s.depth >= s.maxDepth) {
		return false
	}
	s.pos++
	s.depth++
	return true
}

// Member moves to the next member of the object being read: it reads the
// comma before it (none before the first), its key and the colon, and
// leaves the position at the member's value, which the caller must read
// or pass with Value before asking for the next member. end is true, and
// the object closed, when there is no further member.
func (s *Scanner) Member(first bool) (key String, end, ok bool) {
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
	s.SkipSpace()
	return key, false, true
}

// Element moves to the next element of the array being read, as Member
// does for objects, leaving the position at the element.
func (s *Scanner) Element(first bool) (end, ok bool) {
	end, ok = s.next(']', first)
	s.SkipSpace()
	return end, ok
}

// next reads what comes between two members or elements of a container
// that closes with c: the closing bracket (end), or a comma unless this
// is the first.
func (s *Scanner) next(c byte, first bool) (end, ok bool) {
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
func (s *Scanner) End() bool {
	s.SkipSpace()
	return s.pos == len(s.data)
}
