package object

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// fuzzSeeds are valid JSON in odd forms (escaped and repeated keys, bytes
// that are not UTF-8, white space everywhere), invalid JSON of every kind
// the scanners refuse, and nesting around the limit.
var fuzzSeeds = []string{
	`{"a":1}`, ` { "a" : [ 1 , -0.5e+3 , true , null ] } `, `{"a":1,"a":{"b":2}}`, `{"\u0061":"\ud800"}`,
	"{\"\xff\":\"\xfe\"}", `{"s":"a\\\"b\\"}`, `{"l":[1,[2,[3]],{"x":"]"}]}`, `[]`, `{}`, `"s"`, `0`, `null`,
	`{"a":1}x`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`, "{\"a\":\"\x01\"}", `{"a":"\u12"}`, `{"a":"\q"}`,
	`{"a":1,}`, `[1,]`, `{,}`, `[,1]`, `{"a" 1}`, `{"a":1]`, `[1}`, `{"a":1 "b":2}`, `{"a":}`, `{"a":"x}`, ``, ` `,
	// Past the levels validValue keeps on its stack; the limit itself is
	// in TestValid (seeds 10000 deep would take the fuzzer minutes).
	nest(1100, "1"), nest(1100, "{}"),
}

// FuzzRawJSON holds both readings to encoding/json. On any input nothing
// panics; validJSON, a strict rawScanner and a rawIndex accept exactly what
// json.Valid accepts, up to maxNesting; and on valid input the lazy reading
// finds the same extent, and both readings find the members and elements
// encoding/json finds, the last of repeated keys winning, as do the
// splits through a rawIndex at every level.
func FuzzRawJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		got := validJSON(data, maxNesting)
		if got && !valid {
			t.Fatalf("Valid(%q) = true, json.Valid = false", data)
		}
		if !got && valid && nesting(data) <= maxNesting {
			t.Fatalf("Valid(%q) = false, json.Valid = true (nesting %d)", data, nesting(data))
		}
		strict := newStrict(data, maxNesting)
		if ok := strict.Value() && strict.End(); ok != got {
			t.Fatalf("a strict rawScanner reads %q: %v; validJSON: %v", data, ok, got)
		}
		var x rawIndex
		if ok := x.validJSON(data, 3); ok != validJSON(data, 3) {
			t.Fatalf("a rawIndex at depth 3 reads %q: %v; validJSON: %v", data, ok, !ok)
		}
		if ok := x.validJSON(data, maxNesting); ok != got {
			t.Fatalf("a rawIndex reads %q: %v; validJSON: %v", data, ok, got)
		}
		// Whatever the input, walking it must not panic.
		walkAll(newStrict(data, 8))
		walkAll(newLazy(data))
		objectMembers(data, nil)
		arrayElements(data, nil)
		if !got {
			return
		}
		lazy := newLazy(data)
		if !lazy.Value() || !lazy.End() {
			t.Fatalf("the lazy reading of valid %q does not end where the value does", data)
		}
		checkMembers(t, bytes.TrimSpace(data))
		checkIndex(t, &x, trimSpace(data))
	})
}

// checkIndex checks that x splits the value v, and every container in
// it, through the index, into the members the lazy splits find.
func checkIndex(t *testing.T, x *rawIndex, v []byte) {
	t.Helper()
	var lazy, indexed []rawMember
	switch v[0] {
	case '{':
		lazy, indexed = objectMembers(v, nil), x.objectMembers(v, nil)
	case '[':
		lazy, indexed = arrayElements(v, nil), x.arrayElements(v, nil)
	default:
		return
	}
	if members := objectMembers(v, nil); Hollow(v) != (len(members) == 0) {
		t.Fatalf("Hollow(%q) = %v, and it has %d members", v, Hollow(v), len(members))
	}
	if v[0] == '{' {
		checkMember(t, x, v, lazy)
	}
	if len(lazy) > 0 && x.nested(v).spans == nil {
		t.Fatalf("the rawIndex of %q does not hold its container %q", x.data, v)
	}
	if len(lazy) != len(indexed) {
		t.Fatalf("split through a rawIndex, %q has %d members, %d when split lazily", v, len(indexed), len(lazy))
	}
	for i, m := range indexed {
		if !bytes.Equal(m.Key, lazy[i].Key) || !bytes.Equal(m.Value, lazy[i].Value) {
			t.Fatalf("split through a rawIndex, member %d of %q is %q: %q, split lazily %q: %q", i, v, m.Key, m.Value, lazy[i].Key, lazy[i].Value)
		}
		checkIndex(t, x, m.Value)
	}
}

// checkMember checks that x finds, for each key of the object v, the
// value of the first member the split members has under it, and no
// member under a key v lacks.
func checkMember(t *testing.T, x *rawIndex, v []byte, members []rawMember) {
	t.Helper()
	for i, m := range members {
		first := slices.IndexFunc(members, func(o rawMember) bool { return bytes.Equal(o.Key, m.Key) })
		got, ok := x.member(v, m.Key)
		if !ok || first == i && !bytes.Equal(got, m.Value) {
			t.Fatalf("member %q of %q is %q (found: %v), want the first member's %q", m.Key, v, got, ok, members[first].Value)
		}
	}
	missing := []byte("\x00 no such key")
	if got, ok := x.member(v, missing); ok {
		t.Fatalf("%q has a member %q: %q", v, missing, got)
	}
}

// walkAll reads every member and element it can reach, decoding every
// key and string on the way.
func walkAll(s rawScanner) {
	switch s.Peek() {
	case '{':
		s.OpenObject()
		for first := true; ; first = false {
			key, end, ok := s.Member(first)
			if !ok || end {
				return
			}
			_, _ = key.Bytes(), key.Text()
			if !walkValue(&s) {
				return
			}
		}
	case '[':
		s.OpenArray()
		for first := true; ; first = false {
			end, ok := s.Element(first)
			if !ok || end {
				return
			}
			if !walkValue(&s) {
				return
			}
		}
	}
}

func walkValue(s *rawScanner) bool {
	if s.Peek() == '"' {
		str, ok := s.StringValue()
		if ok {
			_, _ = str.Bytes(), unquote(str.Raw)
		}
		return ok
	}
	start := s.Pos()
	if !s.Value() {
		return false
	}
	walkAll(newLazy(s.data[start:s.Pos()]))
	return true
}

// checkMembers checks the members or elements of the valid value v, as
// both readings find them, against encoding/json.
func checkMembers(t *testing.T, v []byte) {
	t.Helper()
	switch v[0] {
	case '{':
		var want map[string]json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		split := lastWins(objectMembers(v, nil))
		walked := map[string][]byte{}
		s := newStrict(v, maxNesting)
		s.OpenObject()
		for first := true; ; first = false {
			key, end, ok := s.Member(first)
			if !ok {
				t.Fatalf("a strict rawScanner fails on a member of valid %q", v)
			}
			if end {
				break
			}
			start := s.Pos()
			s.Value()
			walked[key.Text()] = v[start:s.Pos()]
		}
		for name, got := range map[string]map[string][]byte{"SplitObject": split, "a strict rawScanner": walked} {
			if len(got) != len(want) {
				t.Fatalf("%s finds %d distinct keys in %q, encoding/json %d", name, len(got), v, len(want))
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || !bytes.Equal(g, w) {
					t.Fatalf("%s finds member %q of %q = %q, encoding/json %q", name, k, v, g, w)
				}
			}
		}
	case '[':
		var want []json.RawMessage
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		got := arrayElements(v, nil)
		if len(got) != len(want) {
			t.Fatalf("SplitArray(%q): %d elements, encoding/json %d", v, len(got), len(want))
		}
		for i, m := range got {
			if !bytes.Equal(m.Value, want[i]) {
				t.Fatalf("SplitArray(%q): element %d = %q, encoding/json %q", v, i, m.Value, want[i])
			}
		}
	case '"':
		var want string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		if got := unquote(v); string(got) != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", v, got, want)
		}
	}
}

// lastWins maps each key to the value of its last member, as decoding
// into a map does.
func lastWins(ms []rawMember) map[string][]byte {
	out := make(map[string][]byte, len(ms))
	for _, m := range ms {
		out[string(m.Key)] = m.Value
	}
	return out
}

// nesting is the deepest container nesting in data, outside strings.
func nesting(data []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
