package object

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeMatchesEncodingJSON holds decode's one-allocation path for
// quotes and backslashes to encoding/json, and the strings it leaves to it.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`"k:{\"name\":\"web\"}"`, `"a\\b"`, `"a\/b"`, `"\u00e9t\u00e9"`, `"line\nbreak"`, `"tab\there"`, `"é\"x"`, `"\\"`, `"\"\""`,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if got := decode([]byte(raw)); got != want {
			t.Errorf("decode(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestReadingInPlace reads a fieldsV1 tree and a list as a rule does.
func TestReadingInPlace(t *testing.T) {
	tree := []byte(` {"f:spec": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}, "f:data": {}}`)
	var keys []string
	for _, m := range Members(tree, nil) {
		keys = append(keys, string(m.Key))
	}
	if diff := cmp.Diff([]string{"f:spec", "f:data"}, keys); diff != "" {
		t.Errorf("Members keys (-want +got):\n%s", diff)
	}
	inner := Members(Members(tree, nil)[0].Value, nil)
	if len(inner) != 1 || string(inner[0].Key) != `k:{"name":"web"}` {
		t.Errorf("a list item's key is not unescaped: %q", inner)
	}
	list := Elements([]byte(`[{"name":"a"}, 2, "x"]`), nil)
	if len(list) != 3 || string(list[1].Value) != "2" || Text(list[2].Value) != "x" || Text(list[1].Value) != "" {
		t.Errorf("Elements = %q", list)
	}
	if Members([]byte(`[1]`), nil) != nil || Elements([]byte(`{}`), nil) != nil {
		t.Error("an array read as an object, or an object as an array")
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{{`"web"`, `"w\u0065b"`, true}, {`8080`, `8080`, true}, {`"8080"`, `8080`, false}, {`true`, ` true`, true}, {`"a"`, `"b"`, false}} {
		if got := SameScalar([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("SameScalar(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestViewReadsInPlaceAsMembersDoes holds a view's indexed Members and
// Elements to the lazy ones, at every level of a managedFields entry and
// of text outside the view, and of a view that is no object.
func TestViewReadsInPlaceAsMembersDoes(t *testing.T) {
	v := New([]byte(`{"metadata": {"managedFields": [{"manager": "kustomize-controller", "fieldsV1": {"f:spec": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}, "f:replicas": {}}}}, {"manager": "x"}]}, "spec": [1, {"a": [2]}]}`))
	var walk func(raw []byte, depth int)
	walk = func(raw []byte, depth int) {
		for _, split := range []struct {
			name       string
			view, lazy func([]byte, []Member) []Member
		}{{"Members", v.Members, Members}, {"Elements", v.Elements, Elements}} {
			got, want := split.view(raw, nil), split.lazy(raw, nil)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("depth %d: View.%s(%s) differs from %s (-want +got):\n%s", depth, split.name, raw, split.name, diff)
			}
			for _, m := range got {
				walk(m.Value, depth+1)
			}
		}
	}
	walk(v.Field(), 0)
	walk([]byte(`{"outside": {"the": ["view"]}}`), 0)
	spec := v.Elements(v.Field("metadata", "managedFields"), nil)[0].Value
	fields, _ := v.Member(spec, []byte("fieldsV1"))
	specFields, _ := v.Member(fields, []byte("f:spec"))
	for key, want := range map[string]string{`k:{"name":"web"}`: `{".": {}, "f:image": {}}`, "f:replicas": `{}`, "f:image": ""} {
		if got, ok := v.Member(specFields, []byte(key)); string(got) != want || ok != (want != "") {
			t.Errorf("View.Member(%s, %s) = %q, %v; want %q", specFields, key, got, ok, want)
		}
	}
	for raw, want := range map[string]bool{`{}`: true, ` { } `: true, `[]`: true, `"s"`: true, `{"a": 1}`: false, ` {"a": {}}`: false} {
		if got := Hollow([]byte(raw)); got != want {
			t.Errorf("Hollow(%s) = %v, want %v", raw, got, want)
		}
	}
	bad := New([]byte(`[1]`))
	if got := bad.Members([]byte(`{"a": 1}`), nil); len(got) != 1 || string(got[0].Key) != "a" {
		t.Errorf("a view that is no object reads other text as %q, want its one member", got)
	}
}
