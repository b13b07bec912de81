package argocdguard

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// pattern is an ignoreDifferences group or kind. Argo CD matches them as
// globs (gobwas/glob, without separators): "*" is every group or kind,
// and "apps", with no special character, only itself.
type pattern struct {
	literal string
	// re is the glob, compiled, when the pattern has special characters.
	re *regexp.Regexp
	// invalid is set for a pattern that does not compile: Argo CD logs it
	// and matches nothing.
	invalid bool
}

// globSpecial are the characters that make a pattern a glob.
const globSpecial = `*?[]{}\`

func newPattern(s string) pattern {
	if !strings.ContainsAny(s, globSpecial) {
		return pattern{literal: s}
	}
	re, err := globRegexp(s)
	if err != nil {
		return pattern{invalid: true}
	}
	return pattern{re: re}
}

func (p pattern) match(s string) bool {
	switch {
	case p.invalid:
		return false
	case p.re != nil:
		return p.re.MatchString(s)
	}
	return p.literal == s
}

// globRegexp translates a glob to a regular expression matching the same
// strings: "*" (and "**") any sequence, "?" any one character,
// "[abc]", "[a-z]" and "[!abc]" classes, "{a,b}" alternatives, and "\"
// escaping the next character.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?s)\A(?:`)
	depth := 0
	for i := 0; i < len(glob); {
		r, size := utf8.DecodeRuneInString(glob[i:])
		i += size
		switch {
		case r == '\\':
			if i == len(glob) {
				return nil, errors.New("the pattern ends in an escape")
			}
			e, size := utf8.DecodeRuneInString(glob[i:])
			i += size
			b.WriteString(regexp.QuoteMeta(string(e)))
		case r == '*':
			b.WriteString(`.*`)
		case r == '?':
			b.WriteString(`.`)
		case r == '[':
			class, rest, ok := classOf(glob[i:])
			if !ok {
				return nil, errors.New("a character class is empty or not closed")
			}
			i = len(glob) - len(rest)
			b.WriteString(class)
		case r == '{':
			depth++
			b.WriteString(`(?:`)
		case r == ',' && depth > 0:
			b.WriteByte('|')
		case r == '}' && depth > 0:
			depth--
			b.WriteByte(')')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if depth > 0 {
		return nil, errors.New("an alternative is not closed")
	}
	b.WriteString(`)\z`)
	return regexp.Compile(b.String())
}

// classOf translates the character class that s continues ("abc]",
// "!a-z]", with "\" escaping the next character) and returns what
// follows it.
func classOf(s string) (class, rest string, ok bool) {
	var b strings.Builder
	b.WriteByte('[')
	if r, found := strings.CutPrefix(s, "!"); found {
		b.WriteByte('^')
		s = r
	}
	empty := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case ']':
			if empty {
				return "", "", false
			}
			b.WriteByte(']')
			return b.String(), s[i:], true
		case '-':
			b.WriteRune(r)
		case '\\':
			if i == len(s) {
				return "", "", false
			}
			r, size = utf8.DecodeRuneInString(s[i:])
			i += size
			fallthrough
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		empty = false
	}
	return "", "", false
}
