package object

import (
	"fmt"
	"strings"
)

// A Pointer is a parsed RFC 6901 JSON pointer: the unescaped reference
// tokens, so "/metadata/annotations/a~1b" is ["metadata", "annotations", "a/b"].
// Diff reports changed paths as Pointers' text and skips the paths it is
// given as Pointers; a patch path or a configured path is spelt with the
// same escaping (EscapeToken).
type Pointer []string

// ParsePointer parses an RFC 6901 JSON pointer. The empty string is the
// whole document; every other pointer starts with "/", and "~" may only
// appear as "~0" (a literal "~") or "~1" (a literal "/").
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer starts with \"/\"")
	}
	raw := strings.Split(s[1:], "/")
	p := make(Pointer, len(raw))
	for i, tok := range raw {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("\"~\" must be followed by \"0\" or \"1\" (token %q)", tok)
			}
		}
		p[i] = unescapeToken(tok)
	}
	return p, nil
}

// String renders the pointer with RFC 6901 escaping.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(EscapeToken(tok))
	}
	return b.String()
}

// HasPrefix reports whether prefix is p itself or one of its ancestors.
func (p Pointer) HasPrefix(prefix Pointer) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}

// EscapeToken makes a key a reference token: "~" is written "~0" and "/" is
// written "~1", in that order, so that "~1" in a key stays two characters.
// A key with neither is returned as it is, without allocating.
func EscapeToken(key string) string {
	if !strings.ContainsAny(key, "~/") {
		return key
	}
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// unescapeToken undoes EscapeToken: "~1" first, then "~0", so that "~01" becomes
// "~1" and not "/". It does not check the token; a "~" followed by
// anything but "0" or "1" is left as it is.
func unescapeToken(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
