package fleetguard

import (
	"fmt"
	"strings"

	"github.com/stewardhq/steward/webhooks/internal/jsonpointer"
)

// A pointer is a parsed RFC 6901 JSON pointer: the unescaped reference
// tokens, so "/metadata/annotations/a~1b" is ["metadata", "annotations", "a/b"].
type pointer []string

// parsePointer parses an RFC 6901 JSON pointer. The empty string is the
// whole document; every other pointer starts with "/", and "~" may only
// appear as "~0" (a literal "~") or "~1" (a literal "/").
func parsePointer(s string) (pointer, error) {
	if s == "" {
		return pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer starts with \"/\"")
	}
	raw := strings.Split(s[1:], "/")
	p := make(pointer, len(raw))
	for i, tok := range raw {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf("\"~\" must be followed by \"0\" or \"1\" (token %q)", tok)
			}
		}
		p[i] = jsonpointer.Unescape(tok)
	}
	return p, nil
}

// String renders the pointer with RFC 6901 escaping.
func (p pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(jsonpointer.Escape(tok))
	}
	return b.String()
}

// hasPrefix reports whether prefix is p itself or one of its ancestors.
func (p pointer) hasPrefix(prefix pointer) bool {
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
