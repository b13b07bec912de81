package fleetguard

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
		want   pointer
		err    error
	}{
		"EmptyIsTheWholeDocument": {reason: "RFC 6901: the empty string refers to the whole document.", in: "", want: pointer{}},
		"Plain":                   {reason: "Tokens are split at /.", in: "/spec/replicas", want: pointer{"spec", "replicas"}},
		"EscapedSlash":            {reason: "~1 is a literal /.", in: "/metadata/annotations/kubectl.kubernetes.io~1restartedAt", want: pointer{"metadata", "annotations", "kubectl.kubernetes.io/restartedAt"}},
		"EscapedTilde":            {reason: "~0 is a literal ~, and ~01 is ~1, not /.", in: "/a~0b/~01", want: pointer{"a~b", "~1"}},
		"EmptyToken":              {reason: "\"/\" refers to the key \"\".", in: "/", want: pointer{""}},
		"NoLeadingSlash":          {reason: "A non-empty pointer starts with /.", in: "spec/replicas", err: errors.New(`a JSON pointer starts with "/"`)},
		"BadEscape":               {reason: "~ must be followed by 0 or 1.", in: "/a~2b", err: errors.New(`"~" must be followed by "0" or "1" (token "a~2b")`)},
		"TrailingTilde":           {reason: "A lone ~ at the end is invalid.", in: "/a~", err: errors.New(`"~" must be followed by "0" or "1" (token "a~")`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parsePointer(tc.in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nparsePointer(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if diff := cmp.Diff(errString(tc.err), errString(err)); diff != "" {
				t.Errorf("%s\nparsePointer(%q) error: -want, +got:\n%s", tc.reason, tc.in, diff)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("%s\nparsePointer(%q).String() = %q, want the input back", tc.reason, tc.in, got.String())
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
		"DeepNestingIsBounded": {reason: "Below the depth bound the difference is reported at the deepest path reached.", old: nested(100, `1`), new: nested(100, `2`), want: []string{strings.Repeat("/a", maxDiffDepth)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := readObjects([]byte(tc.old), []byte(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			got := objs.diff(mustPointers(tc.skip...), 100)
			if diff := cmp.Diff(tc.want, got.first, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndiff(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.total != len(got.first) {
				t.Errorf("%s\ndiff(...).total = %d, want %d", tc.reason, got.total, len(got.first))
			}
		})
	}
}

func TestDiffLimitCountsAll(t *testing.T) {
	objs, err := readObjects([]byte(`{"a": 1, "b": 1, "c": 1, "d": 1}`), []byte(`{"a": 2, "b": 2, "c": 2, "d": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	got := objs.diff(nil, 2)
	want := changes{first: []string{"/a", "/b"}, total: 4}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(changes{})); diff != "" {
		t.Errorf("diff keeps the first limit paths and counts the rest: -want, +got:\n%s", diff)
	}
}

// nested returns {"a": {"a": ... leaf}} n levels deep.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"a": `, n) + leaf + strings.Repeat(`}`, n)
}

func TestServerManagedPointersParse(t *testing.T) {
	// mustPointers panics at package initialisation otherwise; this names
	// the list in a failure.
	if len(serverManaged) == 0 {
		t.Fatal("serverManaged is empty")
	}
}

func TestBundleDeployment(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		want   string
	}{
		"FleetID":          {reason: "Fleet's agent builds ids as \"default-\" + bundle deployment name.", id: "default-web-app", want: "web-app"},
		"AgentScope":       {reason: "With an agent scope, Fleet appends it; it cannot be told apart and stays in the name.", id: "default-mcc-harvester-cattle-fleet-local-system", want: "mcc-harvester-cattle-fleet-local-system"},
		"OtherPrefix":      {reason: "An id not built by the agent is shown as it is.", id: "fleet-agent-bootstrap", want: "fleet-agent-bootstrap"},
		"Empty":            {reason: "No id, no bundle deployment.", id: "", want: ""},
		"PlaceholderDash":  {reason: "\"-\" carries no name.", id: "-", want: ""},
		"OnlyPrefixRemain": {reason: "The prefix alone names nothing.", id: "default-", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := bundleDeployment(tc.id); got != tc.want {
				t.Errorf("%s\nbundleDeployment(%q) = %q, want %q", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}
