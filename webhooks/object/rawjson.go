package object

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The raw JSON reader (the raw*.go files) is the view's private detail. It
// reads JSON text in place, without building values, so a view can find
// the few members a rule needs in an object of any size, or cut an object
// into the raw text of its members, at the cost of one pass over
// the bytes and no allocation (but for a rawIndex's record of where its
// containers end).
//
// It reads in one of two ways, and every function says which:
//
//   - Strict reading (validJSON, rawIndex.validJSON, and a rawScanner made by
//     newStrict) accepts only what encoding/json accepts, nested at most
//     a given depth. Callers use it on text nothing has validated yet:
//     whatever it accepts decodes, and whatever it refuses (including
//     text that is valid but nested deeper) they hand to encoding/json,
//     which then decides. So the fast path never changes an answer, only
//     its cost.
//   - Lazy reading (objectMembers, arrayElements, and a rawScanner made by
//     newLazy) checks only the structure it walks: the braces, colons and
//     commas of the objects and arrays it enters, and that each value and
//     string it passes ends. It does not look inside the values it skips.
//     Callers use it on text that was validated before (by validJSON), or
//     whose every other part a JSON decoder will validate later. The
//     splits of a rawIndex read the same way, but pass every container the
//     rawIndex recorded when it validated the text in one step.
//
// Neither way panics, on any input.

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

// A rawString is a JSON string as written in the text, with what the scan
// learnt about it on the way, so that comparing it with a name or
// decoding it costs nothing in the common case: no escapes, ASCII only.
type rawString struct {
	// Raw is the string as written, quotes included.
	Raw []byte
	// escaped: it holds a backslash escape; nonASCII: a byte >= 0x80.
	escaped, nonASCII bool
}

// Inner returns the string's bytes between the quotes, as written.
func (s rawString) Inner() []byte { return s.Raw[1 : len(s.Raw)-1] }

// Escaped reports whether the string holds a backslash escape, so that
// its text differs from its value.
func (s rawString) Escaped() bool { return s.escaped }

// Plain reports whether the string is ASCII without escapes: its value is
// exactly its bytes, and no other spelling (in any case, or with escapes)
// hides behind it.
func (s rawString) Plain() bool { return !s.escaped && !s.nonASCII }

// Is reports whether the string is written exactly as the ASCII text
// lit, without escapes. An escaped spelling of lit is not lit here: the
// callers send such strings to encoding/json.
func (s rawString) Is(lit string) bool { return s.Plain() && string(s.Inner()) == lit }

// Bytes returns the string's value as encoding/json decodes it (escapes
// resolved, invalid UTF-8 replaced): the bytes between the quotes
// themselves when they need neither.
func (s rawString) Bytes() []byte {
	if !s.escaped && (!s.nonASCII || utf8.Valid(s.Inner())) {
		return s.Inner()
	}
	return []byte(decode(s.Raw))
}

// Text is Bytes as a string.
func (s rawString) Text() string {
	if !s.escaped && (!s.nonASCII || utf8.Valid(s.Inner())) {
		return string(s.Inner())
	}
	return decode(s.Raw)
}

// unquote returns the value of the JSON string raw (quotes included) as
// encoding/json decodes it: the bytes between the quotes themselves unless
// they hold escapes or bytes that are not UTF-8. raw must be a valid
// string, as validJSON or a strict rawScanner checks; for anything else the
// result is the bytes between the quotes.
func unquote(raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	return []byte(decode(raw))
}

// decode is the slow path of Bytes, Text and unquote.
func decode(raw []byte) string {
	if s, ok := decodeQuotes(raw[1 : len(raw)-1]); ok {
		return s
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Only for a string no strict scan has checked.
		return string(raw[1 : len(raw)-1])
	}
	return s
}

// decodeQuotes decodes, in one allocation, a string of printable ASCII
// whose only escapes are \", \\ and \/: managedFields' keys of list items
// ("k:{\"name\":\"web\"}") are all of this kind. ok is false for any other
// string, which encoding/json decodes.
func decodeQuotes(in []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' {
			if i++; i == len(in) {
				return "", false
			}
			switch c = in[i]; c {
			case '"', '\\', '/':
			default:
				return "", false
			}
		} else if c < 0x20 || c >= 0x80 {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// plainByte marks the bytes a JSON string holds as they are that need no
// further look: printable ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string whose opening quote is data[i] and
// returns the index after its closing quote, and what rawString records of
// it. Like encoding/json, it takes any byte >= 0x80 (the decoder replaces
// what is not UTF-8).
func scanString(data []byte, i int) (end int, escaped, nonASCII, ok bool) {
	for i++; ; {
		for i < len(data) && plainByte[data[i]] {
			i++
		}
		if i >= len(data) {
			return i, escaped, nonASCII, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nonASCII, true
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				return i, escaped, nonASCII, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return i, escaped, nonASCII, false
				}
				i += 6
			default:
				return i, escaped, nonASCII, false
			}
		case c < 0x20:
			return i, escaped, nonASCII, false
		default: // >= 0x80
			nonASCII = true
			i++
		}
	}
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// skipString returns the index after the string whose opening quote is
// data[i], without validating it: the string ends at the first quote not
// escaped by a backslash. ok is false when there is none.
func skipString(data []byte, i int) (end int, ok bool) {
	for i++; ; {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data), false
		}
		i += q
		// The quote is escaped if an odd number of backslashes precede
		// it; the opening quote stops the count.
		n := 0
		for j := i - 1; data[j] == '\\'; j-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i, true
		}
	}
}

// lazyString returns the string raw (quotes included), which skipString
// found, with what rawString records of it.
func lazyString(raw []byte) rawString {
	s := rawString{Raw: raw}
	for _, c := range s.Inner() {
		switch {
		case c == '\\':
			s.escaped = true
		case c >= utf8.RuneSelf:
			s.nonASCII = true
		}
	}
	return s
}

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipSpace returns the index of the first byte at or after i that is not
// white space, or len(data).
func skipSpace(data []byte, i int) int {
	// Every white space byte is <= ' ': the API server sends compact
	// JSON, and this one comparison is usually all there is to do.
	for i < len(data) && data[i] <= ' ' && isSpace(data[i]) {
		i++
	}
	return i
}

// trimSpace returns data without the white space around it.
func trimSpace(data []byte) []byte {
	i, j := 0, len(data)
	for i < j && isSpace(data[i]) {
		i++
	}
	for j > i && isSpace(data[j-1]) {
		j--
	}
	return data[i:j]
}

// structural marks the bytes skipValue stops at inside a container.
var structural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// skipValue returns the index after the value that starts at data[i],
// without validating it (lazy reading): a string ends at its first
// unescaped quote, a container at the bracket that brings the count of
// open brackets outside strings back to zero (of whichever kind), and
// anything else at the next white space, comma or closing bracket. ok is
// false when the value does not end before the data does, or is empty.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		for depth := 0; i < len(data); i++ {
			c := data[i]
			if !structural[c] {
				continue
			}
			switch c {
			case '"':
				// A string that does not end takes the container with it.
				end, _ := skipString(data, i)
				i = end - 1
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return i, false
	}
	start := i
	for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
		i++
	}
	return i, i > start
}

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
