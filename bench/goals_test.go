package bench

import (
	"slices"
	"testing"
)

func TestParseIntsReadsWhatJoinIntsWrites(t *testing.T) {
	for _, increasing := range []bool{false, true} {
		got, err := ParseInts("n", JoinInts([]int{1, 16, 64}), increasing)
		if err != nil || !slices.Equal(got, []int{1, 16, 64}) {
			t.Errorf("increasing=%v: %v, %v", increasing, got, err)
		}
	}
	if got, err := ParseInts("n", "16,1,16", false); err != nil || !slices.Equal(got, []int{16, 1, 16}) {
		t.Errorf("any order: %v, %v", got, err)
	}
	for _, c := range []struct {
		list       string
		increasing bool
		want       string
	}{
		{"1,x", false, `-n: "x" is not a positive number`},
		{"0", false, `-n: "0" is not a positive number`},
		{"", false, `-n: "" is not a positive number`},
		{"16,1", true, `-n: "1" is not a positive number larger than the one before`},
		{"16,16", true, `-n: "16" is not a positive number larger than the one before`},
		{"-1", true, `-n: "-1" is not a positive number larger than the one before`},
	} {
		if _, err := ParseInts("n", c.list, c.increasing); err == nil || err.Error() != c.want {
			t.Errorf("ParseInts(%q, %v): %v, want %s", c.list, c.increasing, err, c.want)
		}
	}
}
