package apimigration

import (
	"encoding/json"
	"unicode/utf8"
)

// scanner walks JSON text in place, without building values, so the rule
// can find the few members it reads in an object of any size at the cost
// of one pass over its bytes. It accepts only what encoding/json accepts;
// whatever it does not accept (including documents nested deeper than
// maxDepth) the caller hands to encoding/json, which then decides, so the
// fast path never changes an answer, only its cost.
type scanner struct {
	data  []byte
	pos   int
	depth int
}

// maxDepth bounds nesting. encoding/json allows 10000 levels; anything
// deeper than this goes to encoding/json instead.
const maxDepth = 1000

// plainString marks the bytes a JSON string may hold as they are: printable
// ASCII other than the quote and the backslash.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// token is a JSON string as it appears in the text, quotes included, with
// what the scanner learnt about it on the way.
type token struct {
	raw []byte
	// escaped: it holds a backslash escape; nonASCII: a byte >= 0x80.
	escaped, nonASCII bool
}

// inner is the string's bytes between the quotes.
func (t token) inner() []byte { return t.raw[1 : len(t.raw)-1] }

// plain reports whether the string decodes to its own bytes.
func (t token) plain() bool { return !t.escaped && !t.nonASCII }

// is reports whether the string is s, for an ASCII s.
func (t token) is(s string) bool { return t.plain() && string(t.inner()) == s }

// decode returns the string's value exactly as encoding/json decodes it
// (escapes resolved, invalid UTF-8 replaced).
func (t token) decode() string {
	if !t.escaped && (!t.nonASCII || utf8.Valid(t.inner())) {
		return string(t.inner())
	}
	var s string
	// The token was validated by the scanner; encoding/json accepts it.
	_ = json.Unmarshal(t.raw, &s)
	return s
}

func (s *scanner) ws() {
	// The API server sends compact JSON: usually there is nothing to skip.
	if s.pos < len(s.data) && s.data[s.pos] > ' ' {
		return
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the byte at the position, or 0 at the end.
func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// value scans one value starting at the position.
func (s *scanner) value() bool {
	switch c := s.peek(); c {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) literal(l string) bool {
	if len(s.data)-s.pos < len(l) || string(s.data[s.pos:s.pos+len(l)]) != l {
		return false
	}
	s.pos += len(l)
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.pos++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits scans one or more decimal digits.
func (s *scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}

// str scans a string starting at its opening quote.
func (s *scanner) str() (token, bool) {
	t := token{}
	start, d := s.pos, s.data
	i := s.pos + 1
	for {
		for i < len(d) && plainString[d[i]] {
			i++
		}
		if i >= len(d) {
			return t, false
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			t.raw = d[start:s.pos]
			return t, true
		case c == '\\':
			t.escaped = true
			if i+1 >= len(d) {
				return t, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return t, false
				}
				i += 6
			default:
				return t, false
			}
		case c < 0x20:
			return t, false
		default: // >= 0x80: encoding/json takes any byte here.
			t.nonASCII = true
			i++
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// open consumes the opening bracket of an object or array.
func (s *scanner) open(c byte) bool {
	if s.peek() != c || s.depth >= maxDepth {
		return false
	}
	s.pos++
	s.depth++
	return true
}

// member moves to the next member of the object being scanned: it reads
// the separator (none before the first), the key and the colon, and leaves
// the position at the member's value. end is true, and the object closed,
// when there is no further member.
func (s *scanner) member(first bool) (key token, end, ok bool) {
	s.ws()
	if !first {
		switch s.peek() {
		case '}':
			s.pos++
			s.depth--
			return key, true, true
		case ',':
			s.pos++
			s.ws()
		default:
			return key, false, false
		}
	} else if s.peek() == '}' {
		s.pos++
		s.depth--
		return key, true, true
	}
	if s.peek() != '"' {
		return key, false, false
	}
	if key, ok = s.str(); !ok {
		return key, false, false
	}
	s.ws()
	if s.peek() != ':' {
		return key, false, false
	}
	s.pos++
	s.ws()
	return key, false, true
}

// object scans an object starting at its opening brace.
func (s *scanner) object() bool {
	if !s.open('{') {
		return false
	}
	for first := true; ; first = false {
		_, end, ok := s.member(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		if !s.value() {
			return false
		}
	}
}

// element moves to the next element of the array being scanned, like
// member for objects.
func (s *scanner) element(first bool) (end, ok bool) {
	s.ws()
	c := s.peek()
	if c == ']' && first {
		s.pos++
		s.depth--
		return true, true
	}
	if !first {
		switch c {
		case ']':
			s.pos++
			s.depth--
			return true, true
		case ',':
			s.pos++
			s.ws()
		default:
			return false, false
		}
	}
	return false, true
}

// array scans an array starting at its opening bracket.
func (s *scanner) array() bool {
	if !s.open('[') {
		return false
	}
	for first := true; ; first = false {
		end, ok := s.element(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		if !s.value() {
			return false
		}
	}
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.ws()
	return s.pos == len(s.data)
}
