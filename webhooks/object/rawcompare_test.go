package object

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decodeNumbers decodes one JSON value keeping numbers as json.Number, as
// the rules' reference decodings do; empty text decodes to nil.
func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("Valid accepted %q, which does not decode: %v", data, err)
	}
	return v
}

func TestEqual(t *testing.T) {
	cases := map[string]struct {
		reason string
		a, b   string
		want   bool
	}{
		"KeyOrder":         {reason: "Members compare by key, whatever their order.", a: `{"a":1,"b":[true,null]}`, b: ` { "b" : [ true , null ] , "a" : 1 } `, want: true},
		"RepeatedKey":      {reason: "The last of repeated keys wins.", a: `{"a":1,"a":2}`, b: `{"a":2}`, want: true},
		"EscapedString":    {reason: "Strings compare unescaped, keys too.", a: `{"\u0061":"\u0041"}`, b: `{"a":"A"}`, want: true},
		"NumberText":       {reason: "Numbers compare as written.", a: `1`, b: `1.0`},
		"LargeIntegers":    {reason: "Integers beyond float64 precision compare exactly.", a: `9007199254740993`, b: `9007199254740992`},
		"EmptyIsNull":      {reason: "Empty text is a missing value, which is null.", a: ``, b: `null`, want: true},
		"EmptyObjectNull":  {reason: "{} is not null.", a: `{}`, b: `null`},
		"EmptyObjectArray": {reason: "{} is not [].", a: `{}`, b: `[]`},
		"ArrayLength":      {reason: "Arrays compare element by element.", a: `[1,2]`, b: `[1,2,3]`},
		"MissingKey":       {reason: "A key in one object only is a difference.", a: `{"a":null}`, b: `{}`},
		"NumberString":     {reason: "1 and \"1\" differ.", a: `1`, b: `"1"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got, _ := equalJSON(nil, []byte(tc.a), nil, []byte(tc.b), nil); got != tc.want {
				t.Errorf("%s\nEqual(%q, %q) = %v, want %v", tc.reason, tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// FuzzEqual holds equalJSON to reflect.DeepEqual of the decoded values, with
// and without Indexes.
func FuzzEqual(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte(`{"a":1}`))
	}
	f.Add([]byte(`{"b":[1,{"c":"\u0041"}],"a":null}`), []byte(`{"a":null,"b":[1,{"c":"A"}]}`))
	f.Add([]byte(`{"a":1,"a":{"x":[]}}`), []byte(`{"a":{"x":[]}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var xa, xb rawIndex
		if !xa.validJSON(a, maxNesting) || !xb.validJSON(b, maxNesting) {
			return
		}
		ta, tb := trimSpace(a), trimSpace(b)
		want := reflect.DeepEqual(decodeNumbers(t, a), decodeNumbers(t, b))
		if got, _ := equalJSON(nil, ta, nil, tb, nil); got != want {
			t.Fatalf("Equal(%q, %q) = %v, reflect.DeepEqual of the decoded values: %v", a, b, got, want)
		}
		if got, _ := equalJSON(&xa, ta, &xb, tb, nil); got != want {
			t.Fatalf("Equal(%q, %q) through Indexes = %v, reflect.DeepEqual of the decoded values: %v", a, b, got, want)
		}
	})
}
