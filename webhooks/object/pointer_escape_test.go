package object

import "testing"

func TestEscape(t *testing.T) {
	cases := map[string]struct {
		reason, key, want string
	}{
		"Plain":      {reason: "A key without / or ~ is its own token.", key: "replicas", want: "replicas"},
		"Slash":      {reason: "/ is written ~1.", key: "steward.dev/migrated-at", want: "steward.dev~1migrated-at"},
		"Tilde":      {reason: "~ is written ~0.", key: "a~b", want: "a~0b"},
		"TildeFirst": {reason: "~ is escaped before /, so ~1 in a key stays two characters.", key: "~1/", want: "~01~1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := EscapeToken(tc.key); got != tc.want {
				t.Errorf("%s\nEscape(%q) = %q, want %q", tc.reason, tc.key, got, tc.want)
			}
			if got := unescapeToken(tc.want); got != tc.key {
				t.Errorf("%s\nUnescape(%q) = %q, want %q", tc.reason, tc.want, got, tc.key)
			}
		})
	}
}

// FuzzEscape checks that every key survives escaping and unescaping, and
// that an escaped key holds no "/".
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a/b", "~", "~01", "/~", "a~1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		tok := EscapeToken(key)
		for i := 0; i < len(tok); i++ {
			if tok[i] == '/' {
				t.Fatalf("EscapeToken(%q) = %q holds a /", key, tok)
			}
		}
		if got := unescapeToken(tok); got != key {
			t.Fatalf("unescapeToken(EscapeToken(%q)) = %q", key, got)
		}
	})
}
