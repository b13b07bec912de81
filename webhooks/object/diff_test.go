package object

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParsePointer(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   Pointer
		err    error
	}{
		"EmptyIsTheWholeDocument": {reason: "RFC 6901: the empty string refers to the whole document.", in: "", want: Pointer{}},
		"Plain":                   {reason: "Tokens are split at /.", in: "/spec/replicas", want: Pointer{"spec", "replicas"}},
		"EscapedSlash":            {reason: "~1 is a literal /.", in: "/metadata/annotations/kubectl.kubernetes.io~1restartedAt", want: Pointer{"metadata", "annotations", "kubectl.kubernetes.io/restartedAt"}},
		"EscapedTilde":            {reason: "~0 is a literal ~, and ~01 is ~1, not /.", in: "/a~0b/~01", want: Pointer{"a~b", "~1"}},
		"EmptyToken":              {reason: "\"/\" refers to the key \"\".", in: "/", want: Pointer{""}},
		"NoLeadingSlash":          {reason: "A non-empty pointer starts with /.", in: "spec/replicas", err: errors.New(`a JSON pointer starts with "/"`)},
		"BadEscape":               {reason: "~ must be followed by 0 or 1.", in: "/a~2b", err: errors.New(`"~" must be followed by "0" or "1" (token "a~2b")`)},
		"TrailingTilde":           {reason: "A lone ~ at the end is invalid.", in: "/a~", err: errors.New(`"~" must be followed by "0" or "1" (token "a~")`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParsePointer(tc.in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nParsePointer(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if diff := cmp.Diff(errString(tc.err), errString(err)); diff != "" {
				t.Errorf("%s\nParsePointer(%q) error: -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("%s\nParsePointer(%q).String() = %q, want the input back", tc.reason, tc.in, got.String())
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDiff(t *testing.T) {
	cases := map[string]struct {
		reason string
		old    string
		new    string
		skip   []string
		want   []string
	}{
		"Equal":                {reason: "Identical objects have no changes.", old: `{"a": {"b": [1, {"c": "d"}]}}`, new: `{"a": {"b": [1, {"c": "d"}]}}`},
		"ScalarChange":         {reason: "A changed leaf is reported at its path.", old: `{"a": {"b": 1}}`, new: `{"a": {"b": 2}}`, want: []string{"/a/b"}},
		"KeyAdded":             {reason: "An added key is a change.", old: `{"a": {}}`, new: `{"a": {"b": "x"}}`, want: []string{"/a/b"}},
		"KeyRemoved":           {reason: "A removed key is a change.", old: `{"a": {"b": "x"}}`, new: `{"a": {}}`, want: []string{"/a/b"}},
		"SubtreeAddedLeaves":   {reason: "An added subtree is reported leaf by leaf, in key order.", old: `{}`, new: `{"a": {"z": 1, "b": {"c": true}}}`, want: []string{"/a/b/c", "/a/z"}},
		"ListByIndex":          {reason: "Lists compare element by element.", old: `{"l": [1, 2, 3]}`, new: `{"l": [1, 5, 3]}`, want: []string{"/l/1"}},
		"ListGrows":            {reason: "An appended element is reported at its index.", old: `{"l": [1]}`, new: `{"l": [1, 2]}`, want: []string{"/l/1"}},
		"ListShrinks":          {reason: "A removed element is reported at its index.", old: `{"l": [{"a": 1}, {"a": 2}]}`, new: `{"l": [{"a": 1}]}`, want: []string{"/l/1/a"}},
		"InsertShiftsIndexes":  {reason: "Lists compare by index, so an insertion changes every later index.", old: `{"l": ["a", "b"]}`, new: `{"l": ["x", "a", "b"]}`, want: []string{"/l/0", "/l/1", "/l/2"}},
		"TypeChange":           {reason: "A value changing type is a change at its path.", old: `{"a": {"b": 1}}`, new: `{"a": "b"}`, want: []string{"/a"}},
		"ListToMap":            {reason: "A list replaced by a map is a change at its path.", old: `{"a": [1]}`, new: `{"a": {"0": 1}}`, want: []string{"/a"}},
		"NumberVsString":       {reason: "1 and \"1\" differ.", old: `{"a": 1}`, new: `{"a": "1"}`, want: []string{"/a"}},
		"LargeIntegersExact":   {reason: "Integers beyond float64 precision still compare exactly.", old: `{"a": 9007199254740993}`, new: `{"a": 9007199254740992}`, want: []string{"/a"}},
		"EmptyEqualsMissing":   {reason: "The API server omits empty fields: null, {} and [] equal a missing field.", old: `{"a": null, "b": {}, "c": []}`, new: `{}`},
		"KeysAreEscaped":       {reason: "Keys with / and ~ are escaped per RFC 6901.", old: `{"m": {"a/b": 1, "c~d": 1}}`, new: `{"m": {"a/b": 2, "c~d": 2}}`, want: []string{"/m/a~1b", "/m/c~0d"}},
		"SkipCoversSubtree":    {reason: "A skipped path hides itself and everything below it.", old: `{"s": {"a": 1, "b": {"c": 1}}, "x": 1}`, new: `{"s": {"a": 2, "b": {"c": 2}}, "x": 2}`, skip: []string{"/s"}, want: []string{"/x"}},
		"SkipLeafInAddedTree":  {reason: "A skipped leaf inside an added subtree is not reported; its siblings are.", old: `{}`, new: `{"a": {"b": 1, "c": 2}}`, skip: []string{"/a/b"}, want: []string{"/a/c"}},
		"SkipIsExact":          {reason: "Skipping /spec/replicas does not skip /spec/replicasMax.", old: `{"spec": {"replicas": 1, "replicasMax": 1}}`, new: `{"spec": {"replicas": 2, "replicasMax": 2}}`, skip: []string{"/spec/replicas"}, want: []string{"/spec/replicasMax"}},
		"SkipListElement":      {reason: "A pointer can name a list element.", old: `{"l": [1, 2]}`, new: `{"l": [3, 4]}`, skip: []string{"/l/0"}, want: []string{"/l/1"}},
		"SkipEscapedKey":       {reason: "Skipped pointers are matched unescaped.", old: `{"m": {"a/b": 1}}`, new: `{"m": {"a/b": 2}}`, skip: []string{"/m/a~1b"}},
		"DeepNestingIsBounded": {reason: "Below the depth bound the difference is reported at the deepest path reached.", old: nestedA(100, `1`), new: nestedA(100, `2`), want: []string{strings.Repeat("/a", maxDiffDepth)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diff(New([]byte(tc.old)), New([]byte(tc.new)), mustPointers(t, tc.skip...), 100)
			if diff := cmp.Diff(tc.want, got.First, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDiff(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.Total != len(got.First) {
				t.Errorf("%s\nDiff(...).Total = %d, want %d", tc.reason, got.Total, len(got.First))
			}
		})
	}
}

func TestDiffLimitCountsAll(t *testing.T) {
	got := Diff(New([]byte(`{"a": 1, "b": 1, "c": 1, "d": 1}`)), New([]byte(`{"a": 2, "b": 2, "c": 2, "d": 2}`)), nil, 2)
	want := Changes{First: []string{"/a", "/b"}, Total: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff keeps the first limit paths and counts the rest: -want, +got:\n%s", diff)
	}
}

// mustPointers parses pointers a test names.
func mustPointers(t testing.TB, ss ...string) []Pointer {
	t.Helper()
	ps := make([]Pointer, len(ss))
	for i, s := range ss {
		p, err := ParsePointer(s)
		if err != nil {
			t.Fatalf("ParsePointer(%q): %v", s, err)
		}
		ps[i] = p
	}
	return ps
}

// FuzzParsePointer checks that every pointer that parses renders back to
// itself, so reported and configured paths use one spelling.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/spec/replicas", "/a~0b~1c", "/~01", "a", "/~", "/~2", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, got)
		}
	})
}

// nestedA returns {"a": {"a": ... leaf}} n levels deep.
func nestedA(n int, leaf string) string {
	return strings.Repeat(`{"a": `, n) + leaf + strings.Repeat(`}`, n)
}
