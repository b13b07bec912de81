package object

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

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
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Only for a string no strict scan has checked.
		return string(raw[1 : len(raw)-1])
	}
	return s
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
