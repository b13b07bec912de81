package object

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// nest wraps leaf in n arrays.
func nest(n int, leaf string) string {
	return strings.Repeat("[", n) + leaf + strings.Repeat("]", n)
}

func TestValid(t *testing.T) {
	cases := map[string]struct {
		reason   string
		data     string
		maxDepth int
		want     bool
	}{
		"Scalars":             {reason: "Every kind of scalar is a value.", data: `[true,false,null,"s",0,-1.5e+3,1E2]`, maxDepth: 1, want: true},
		"WhiteSpaceAround":    {reason: "White space around the value is allowed.", data: " \t\n{\"a\" : [ 1 , 2 ] }\r\n", maxDepth: 2, want: true},
		"NotUTF8":             {reason: "Like encoding/json, bytes that are not UTF-8 are taken inside strings.", data: "\"\xff\"", maxDepth: 1, want: true},
		"Escapes":             {reason: "Every escape encoding/json knows is taken.", data: `"\"\\\/\b\f\n\r\t\u00e9\uD834\uDD1E"`, maxDepth: 0, want: true},
		"Empty":               {reason: "No value is not a value.", data: " ", maxDepth: 1},
		"Trailing":            {reason: "Nothing but white space may follow the value.", data: `{} x`, maxDepth: 1},
		"TwoValues":           {reason: "One value, not two.", data: `1 2`, maxDepth: 1},
		"LeadingZero":         {reason: "A number does not start with 0 followed by digits.", data: `01`, maxDepth: 1},
		"BareDot":             {reason: "A fraction needs digits.", data: `1.`, maxDepth: 1},
		"BareExponent":        {reason: "An exponent needs digits.", data: `1e+`, maxDepth: 1},
		"Minus":               {reason: "A minus needs digits.", data: `-`, maxDepth: 1},
		"ShortLiteral":        {reason: "Literals are spelt out.", data: `tru`, maxDepth: 1},
		"ControlInString":     {reason: "Control characters must be escaped.", data: "\"\x01\"", maxDepth: 1},
		"BadEscape":           {reason: "Unknown escapes are refused.", data: `"\q"`, maxDepth: 1},
		"ShortUnicodeEscape":  {reason: "A \\u escape has four hex digits.", data: `"\u12"`, maxDepth: 1},
		"Unterminated":        {reason: "A string ends with a quote.", data: `"abc`, maxDepth: 1},
		"TrailingComma":       {reason: "No comma after the last member.", data: `{"a":1,}`, maxDepth: 1},
		"MissingColon":        {reason: "A key is followed by a colon.", data: `{"a" 1}`, maxDepth: 1},
		"UnquotedKey":         {reason: "Keys are strings.", data: `{a:1}`, maxDepth: 1},
		"MismatchedClose":     {reason: "An array closes with a bracket, not a brace.", data: `[1}`, maxDepth: 1},
		"Unclosed":            {reason: "Every container closes.", data: `{"a":[1,2]`, maxDepth: 2},
		"AtDepth":             {reason: "Nesting up to the limit is taken.", data: nest(3, "1"), maxDepth: 3, want: true},
		"BeyondDepth":         {reason: "Nesting beyond the limit is left to encoding/json.", data: nest(4, "1"), maxDepth: 3},
		"EmptyContainerDepth": {reason: "Empty containers count towards the depth too.", data: nest(4, ""), maxDepth: 3},
		"ScalarAtDepthZero":   {reason: "A limit of 0 still takes a scalar.", data: `"s"`, maxDepth: 0, want: true},
		"LimitAboveMax":       {reason: "A limit above maxNesting counts as maxNesting.", data: nest(maxNesting+1, "1"), maxDepth: maxNesting + 1},
		"MaxDepth":            {reason: "MaxDepth itself is reached.", data: nest(maxNesting, "1"), maxDepth: maxNesting, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := validJSON([]byte(tc.data), tc.maxDepth); got != tc.want {
				t.Errorf("%s\nValid(%q, %d) = %v, want %v", tc.reason, tc.data, tc.maxDepth, got, tc.want)
			}
		})
	}
}

// walk reads the object data member by member with s, passing over each
// value, and returns the keys and values it saw.
func walk(s rawScanner) ([][2]string, bool) {
	var out [][2]string
	if !s.OpenObject() {
		return out, false
	}
	for first := true; ; first = false {
		key, end, ok := s.Member(first)
		if !ok {
			return out, false
		}
		if end {
			return out, s.End()
		}
		v, ok := s.RawValue()
		if !ok {
			return out, false
		}
		out = append(out, [2]string{key.Text(), string(v)})
	}
}

func TestScannerMembers(t *testing.T) {
	type want struct {
		members [][2]string
		ok      bool
	}
	cases := map[string]struct {
		reason       string
		data         string
		strict, lazy want
	}{
		"Compact": {
			reason: "Both read every member of compact JSON, values as written.",
			data:   `{"a":1,"b":{"c":[1,"]"]},"d":"x\"y"}`,
			strict: want{[][2]string{{"a", "1"}, {"b", `{"c":[1,"]"]}`}, {"d", `"x\"y"`}}, true},
			lazy:   want{[][2]string{{"a", "1"}, {"b", `{"c":[1,"]"]}`}, {"d", `"x\"y"`}}, true},
		},
		"Spaced": {
			reason: "White space is passed over and kept out of the values.",
			data:   " { \"a\" : [ 1 ] ,\n\"b\" :\tnull } ",
			strict: want{[][2]string{{"a", "[ 1 ]"}, {"b", "null"}}, true},
			lazy:   want{[][2]string{{"a", "[ 1 ]"}, {"b", "null"}}, true},
		},
		"EscapedKey": {
			reason: "Keys are decoded as encoding/json decodes them.",
			data:   `{"\u0061\\":1}`,
			strict: want{[][2]string{{`a\`, "1"}}, true},
			lazy:   want{[][2]string{{`a\`, "1"}}, true},
		},
		"Empty": {
			reason: "An empty object has no members.",
			data:   `{ }`,
			strict: want{nil, true},
			lazy:   want{nil, true},
		},
		"InvalidValue": {
			reason: "Only the strict reading looks inside the values it passes.",
			data:   `{"a":[01,tru],"b":2}`,
			strict: want{nil, false},
			lazy:   want{[][2]string{{"a", "[01,tru]"}, {"b", "2"}}, true},
		},
		"TrailingComma": {
			reason: "Both check the structure of the object they walk.",
			data:   `{"a":1,}`,
			strict: want{[][2]string{{"a", "1"}}, false},
			lazy:   want{[][2]string{{"a", "1"}}, false},
		},
		"LeadingComma": {
			reason: "No comma before the first member.",
			data:   `{,"a":1}`,
			strict: want{nil, false},
			lazy:   want{nil, false},
		},
		"MissingColon": {
			reason: "A key is followed by a colon.",
			data:   `{"a" 1}`,
			strict: want{nil, false},
			lazy:   want{nil, false},
		},
		"UnterminatedValue": {
			reason: "A value that does not end fails both.",
			data:   `{"a":{"b":"1}}`,
			strict: want{nil, false},
			lazy:   want{nil, false},
		},
		"EmptyValue": {
			reason: "A member needs a value.",
			data:   `{"a":}`,
			strict: want{nil, false},
			lazy:   want{nil, false},
		},
		"Truncated": {
			reason: "The data may end anywhere.",
			data:   `{"a":1`,
			strict: want{[][2]string{{"a", "1"}}, false},
			lazy:   want{[][2]string{{"a", "1"}}, false},
		},
		"NotAnObject": {
			reason: "OpenObject needs an object.",
			data:   `[1]`,
			strict: want{nil, false},
			lazy:   want{nil, false},
		},
		"TooDeep": {
			reason: "Only the strict reading bounds nesting.",
			data:   `{"a":` + nest(3, "") + `}`,
			strict: want{nil, false},
			lazy:   want{[][2]string{{"a", nest(3, "")}}, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, m := range []struct {
				mode string
				s    rawScanner
				want want
			}{{"strict", newStrict([]byte(tc.data), 3), tc.strict}, {"lazy", newLazy([]byte(tc.data)), tc.lazy}} {
				members, ok := walk(m.s)
				if diff := cmp.Diff(m.want, want{members, ok}, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\n%s reading of %q (-want +got):\n%s", tc.reason, m.mode, tc.data, diff)
				}
			}
		})
	}
}

func TestScannerElements(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   string
		want   []string
		ok     bool
	}{
		"Elements": {reason: "Elements are read in order, as written.", data: `[ 1 ,"a", [2] ,{}]`, want: []string{"1", `"a"`, "[2]", "{}"}, ok: true},
		"Empty":    {reason: "An empty array has no elements.", data: `[ ]`, ok: true},
		"Trailing": {reason: "No comma after the last element.", data: `[1,]`, want: []string{"1"}},
		"Leading":  {reason: "No comma before the first element.", data: `[,1]`},
		"Missing":  {reason: "Elements are separated by commas.", data: `[1 2]`, want: []string{"1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, s := range []rawScanner{newStrict([]byte(tc.data), 2), newLazy([]byte(tc.data))} {
				var got []string
				ok := s.OpenArray()
				for first := true; ok; first = false {
					end, more := s.Element(first)
					if !more || end {
						ok = more
						break
					}
					start := s.Pos()
					if ok = s.Value(); ok {
						got = append(got, string(s.data[start:s.Pos()]))
					}
				}
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" || ok != tc.ok {
					t.Errorf("%s\nreading %q (strict %v): ok %v, want %v; elements (-want +got):\n%s", tc.reason, tc.data, s.strict, ok, tc.ok, diff)
				}
			}
		})
	}
}

func TestString(t *testing.T) {
	type want struct {
		Escaped, Plain, IsA bool
		Text                string
	}
	cases := map[string]struct {
		reason string
		raw    string
		want   want
	}{
		"Plain":     {reason: "ASCII without escapes is its own value.", raw: `"a"`, want: want{Plain: true, IsA: true, Text: "a"}},
		"Escaped":   {reason: "An escaped spelling decodes, but is not taken for the plain one.", raw: `"\u0061"`, want: want{Escaped: true, Text: "a"}},
		"NonASCII":  {reason: "UTF-8 decodes to itself but is not plain.", raw: `"é"`, want: want{Text: "é"}},
		"NotUTF8":   {reason: "Bytes that are not UTF-8 are replaced, as encoding/json does.", raw: "\"a\xff\"", want: want{Text: "a\ufffd"}},
		"Surrogate": {reason: "A lone surrogate is replaced.", raw: `"\ud800"`, want: want{Escaped: true, Text: "\ufffd"}},
		"Other":     {reason: "Is compares the whole string.", raw: `"ab"`, want: want{Plain: true, Text: "ab"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, s := range []rawScanner{newStrict([]byte(tc.raw), 1), newLazy([]byte(tc.raw))} {
				str, ok := s.StringValue()
				if !ok || !s.End() {
					t.Fatalf("%s\nStringValue(%q) failed (strict %v)", tc.reason, tc.raw, s.strict)
				}
				got := want{str.Escaped(), str.Plain(), str.Is("a"), str.Text()}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s\n%q (strict %v) (-want +got):\n%s", tc.reason, tc.raw, s.strict, diff)
				}
				if string(str.Bytes()) != tc.want.Text || string(unquote(str.Raw)) != tc.want.Text {
					t.Errorf("%s\nBytes(%q) = %q, unquote = %q, want %q", tc.reason, tc.raw, str.Bytes(), unquote(str.Raw), tc.want.Text)
				}
			}
		})
	}
}

func TestSplit(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   string
		split  func([]byte, []rawMember) []rawMember
		want   []rawMember
	}{
		"Object": {
			reason: "Members come in the order written, repeated keys included, keys decoded.",
			data:   `{"a":1, "b" : {"c":2},"\u0061":"x"}`,
			split:  objectMembers,
			want:   []rawMember{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte(`{"c":2}`)}, {Key: []byte("a"), Value: []byte(`"x"`)}},
		},
		"Array": {
			reason: "Elements come in order, with no key.",
			data:   `[1, [2] ,"]"]`,
			split:  arrayElements,
			want:   []rawMember{{Value: []byte("1")}, {Value: []byte("[2]")}, {Value: []byte(`"]"`)}},
		},
		"Broken": {
			reason: "Of a broken object, the members before the fault.",
			data:   `{"a":1,"b"}`,
			split:  objectMembers,
			want:   []rawMember{{Key: []byte("a"), Value: []byte("1")}},
		},
		"Mismatch": {
			reason: "SplitObject of an array finds no members.",
			data:   `[1]`,
			split:  objectMembers,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.split([]byte(tc.data), nil)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nsplitting %q (-want +got):\n%s", tc.reason, tc.data, diff)
			}
		})
	}
}

func TestSkipValue(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   string
		end    int
		ok     bool
	}{
		"String":          {reason: "A string ends at its first unescaped quote.", data: `"a\\\"b\\" x`, end: 10, ok: true},
		"Container":       {reason: "A container ends where its brackets balance, outside strings.", data: `{"a":["}"]} x`, end: 11, ok: true},
		"Scalar":          {reason: "A scalar ends at a delimiter.", data: `12.5,`, end: 4, ok: true},
		"InvalidScalar":   {reason: "A scalar is not validated.", data: `nope]`, end: 4, ok: true},
		"EmptyScalar":     {reason: "A scalar is not empty.", data: `,`, end: 0},
		"UnclosedString":  {reason: "A string must end.", data: `"abc\"`, end: 6},
		"UnclosedObject":  {reason: "A container must end.", data: `{"a":[1]`, end: 8},
		"StringInUnclose": {reason: "So must a string in a container.", data: `["a]`, end: 4},
		"End":             {reason: "No value at the end of the data.", data: ``, end: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			end, ok := skipValue([]byte(tc.data), 0)
			if end != tc.end || ok != tc.ok {
				t.Errorf("%s\nskipValue(%q) = %d, %v; want %d, %v", tc.reason, tc.data, end, ok, tc.end, tc.ok)
			}
		})
	}
}

func TestTrimSpace(t *testing.T) {
	for in, want := range map[string]string{" \t{}\r\n": "{}", "": "", "  ": "", "1": "1"} {
		if got := string(trimSpace([]byte(in))); got != want {
			t.Errorf("TrimSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIndex(t *testing.T) {
	text := []byte(` {"a":{"b":[1,{"c":"}"}],"d":{}}, "e" : [ [], [2] ] } `)
	var x rawIndex
	if !x.validJSON(text, maxNesting) {
		t.Fatalf("Index.Valid(%q) = false", text)
	}
	top := trimSpace(text)
	a := x.objectMembers(top, nil)[0].Value
	cases := map[string]struct {
		reason  string
		v       []byte
		split   func(*rawIndex, []byte, []rawMember) []rawMember
		indexed bool
		want    []rawMember
	}{
		"Top": {
			reason: "The text less white space is split through the index.",
			v:      top, split: (*rawIndex).objectMembers, indexed: true,
			want: []rawMember{{Key: []byte("a"), Value: []byte(`{"b":[1,{"c":"}"}],"d":{}}`)}, {Key: []byte("e"), Value: []byte(`[ [], [2] ]`)}},
		},
		"Member": {
			reason: "A member's value is split through the index.",
			v:      a, split: (*rawIndex).objectMembers, indexed: true,
			want: []rawMember{{Key: []byte("b"), Value: []byte(`[1,{"c":"}"}]`)}, {Key: []byte("d"), Value: []byte(`{}`)}},
		},
		"Array": {
			reason: "So is an array, empty elements read lazily.",
			v:      x.objectMembers(top, nil)[1].Value, split: (*rawIndex).arrayElements, indexed: true,
			want: []rawMember{{Value: []byte(`[]`)}, {Value: []byte(`[2]`)}},
		},
		"Copy": {
			reason: "A copy of a container is not in the index: it is split lazily, to the same members.",
			v:      bytes.Clone(a), split: (*rawIndex).objectMembers,
			want: []rawMember{{Key: []byte("b"), Value: []byte(`[1,{"c":"}"}]`)}, {Key: []byte("d"), Value: []byte(`{}`)}},
		},
		"Part": {
			reason: "Part of a container is not a container of the index.",
			v:      a[:len(a)-1], split: (*rawIndex).objectMembers,
			want: []rawMember{{Key: []byte("b"), Value: []byte(`[1,{"c":"}"}]`)}, {Key: []byte("d"), Value: []byte(`{}`)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := x.nested(tc.v).spans != nil; got != tc.indexed {
				t.Errorf("%s\nthe index holds %q: %v, want %v", tc.reason, tc.v, got, tc.indexed)
			}
			got := tc.split(&x, tc.v, nil)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nsplitting %q (-want +got):\n%s", tc.reason, tc.v, diff)
			}
		})
	}
	t.Run("Invalid", func(t *testing.T) {
		if x.validJSON([]byte(`{"a":{"b":1}`), maxNesting) || x.nested(top).spans != nil || len(x.spans) != 0 {
			t.Errorf("a rawIndex of invalid text must refuse it and hold nothing, holds %v", x.spans)
		}
	})
}
