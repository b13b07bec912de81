package fleetguard

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// This file reads raw JSON without decoding it: a validator, and a splitter
// that cuts an object or a list into the raw text of its members. Updates
// are judged on raw members so that only the parts that differ are ever
// decoded; managedFields and status, most of an object's bytes, never are.

// maxScanDepth bounds the nesting validJSON accepts. Deeper documents take
// the decoding path, which reports them as encoding/json does (its own
// limit is 10000).
const maxScanDepth = 512

// A member is one member of a JSON object (key, unescaped, and value) or
// one element of a list (value only). Both are slices of the input, or of
// a copy for a key that needed unescaping.
type member struct {
	key, val []byte
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// validJSON reports whether data is exactly one JSON value, surrounded by
// nothing but whitespace and nested at most maxScanDepth deep. It accepts
// nothing encoding/json rejects, so whatever it accepts decodes.
func validJSON(data []byte) bool {
	var stack [maxScanDepth]byte // '{' or '[' per open container
	depth := 0
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		complete := true
		switch c := data[i]; {
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == end {
				i++
				break
			}
			if depth == maxScanDepth {
				return false
			}
			stack[depth] = c
			depth++
			complete = false
			if c == '{' {
				var ok bool
				if i, ok = scanKey(data, i); !ok {
					return false
				}
			}
		case c == '"':
			var ok bool
			if i, ok = scanString(data, i); !ok {
				return false
			}
		case c == 't':
			if !bytes.HasPrefix(data[i:], []byte("true")) {
				return false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(data[i:], []byte("false")) {
				return false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(data[i:], []byte("null")) {
				return false
			}
			i += 4
		default:
			var ok bool
			if i, ok = scanNumber(data, i); !ok {
				return false
			}
		}
		if !complete {
			continue
		}
		// After a complete value: close containers, or move to the next
		// member or element.
		for next := false; !next; {
			i = skipSpace(data, i)
			if depth == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			open := stack[depth-1]
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
				if open == '{' {
					var ok bool
					if i, ok = scanKey(data, i); !ok {
						return false
					}
				}
				next = true
			case '}', ']':
				if (data[i] == '}') != (open == '{') {
					return false
				}
				depth--
				i++
			default:
				return false
			}
		}
	}
}

// scanKey reads `"key" :` and the whitespace after it, returning where the
// value starts.
func scanKey(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, ok := scanString(data, i)
	if !ok {
		return i, false
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return skipSpace(data, i+1), true
}

// plain marks the bytes a JSON string holds as they are: not a quote, not
// a backslash, not a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// structural marks the bytes skipValue stops at inside a container.
var structural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// scanString validates the string starting at data[i] == '"' and returns
// the index after its closing quote. Like encoding/json, it accepts bytes
// that are not valid UTF-8 (the decoder replaces them).
func scanString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		for i < len(data) && plain[data[i]] {
			i++
		}
		if i == len(data) {
			break
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the number starting at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(data []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(data) && isDigit(data[i]) {
			i++
		}
		return i, i > start
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i >= len(data) || !isDigit(data[i]) {
		return i, false
	}
	if data[i] == '0' {
		i++
	} else {
		i, _ = digits(i)
	}
	var ok bool
	if i < len(data) && data[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// The functions below read JSON that validJSON accepted; they do not
// check it again.

// skipValue returns the index after the value starting at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			for i < len(data) && !structural[data[i]] {
				i++
			}
			if i == len(data) {
				break
			}
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
		i++
	}
	return i
}

// skipString returns the index after the string starting at data[i].
func skipString(data []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data)
		}
		i += q
		// The quote is escaped if an odd number of backslashes precede it.
		n := 0
		for j := i - 1; data[j] == '\\'; j-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// trimValue returns data without surrounding whitespace.
func trimValue(data []byte) []byte {
	i, j := 0, len(data)
	for i < j && isSpace(data[i]) {
		i++
	}
	for j > i && isSpace(data[j-1]) {
		j--
	}
	return data[i:j]
}

// splitObject appends the members of the object data to buf, in document
// order, keys unescaped.
func splitObject(data []byte, buf []member) []member {
	i := skipSpace(data, 1)
	for i < len(data) && data[i] == '"' {
		end := skipString(data, i)
		key := unquote(data[i:end])
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // ':'
		end = skipValue(data, i)
		buf = append(buf, member{key: key, val: data[i:end]})
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return buf
}

// splitList appends the elements of the list data to buf, in order.
func splitList(data []byte, buf []member) []member {
	i := skipSpace(data, 1)
	for i < len(data) && data[i] != ']' {
		end := skipValue(data, i)
		buf = append(buf, member{val: data[i:end]})
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return buf
}

// unquote returns the bytes of the JSON string s, quotes included, as
// encoding/json decodes them: the input itself unless it has escapes or
// bytes that are not UTF-8.
func unquote(s []byte) []byte {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return inner // unreachable for validated input
	}
	return []byte(out)
}
