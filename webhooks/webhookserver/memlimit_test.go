package webhookserver

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestParseMemoryLimit(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    int64
		wantErr string
	}{
		"Unset":                 {in: "", want: 0},
		"Zero":                  {in: "0", want: 0},
		"Quantity":              {in: "256Mi", want: 256 << 20},
		"DownwardAPIBytes":      {in: "268435456", want: 256 << 20},
		"DecimalSuffix":         {in: "1G", want: 1_000_000_000},
		"NotAQuantity":          {in: "lots", wantErr: `"lots" is not a quantity`},
		"Negative":              {in: "-256Mi", wantErr: "-256Mi is negative"},
		"BelowWhatStewardNeeds": {in: "32Mi", wantErr: "32Mi is below the 64Mi"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseMemoryLimit(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseMemoryLimit(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseMemoryLimit(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestSoftMemoryLimitLeavesGOMEMLIMITToTheOperator(t *testing.T) {
	if soft, ok := softMemoryLimit(256<<20, ""); !ok || soft != 241591910 {
		t.Errorf("a 256Mi container limit: got %d, %v; want 90%% of it, 241591910", soft, ok)
	}
	for _, gomemlimit := range []string{"200MiB", "off"} {
		if soft, ok := softMemoryLimit(256<<20, gomemlimit); ok {
			t.Errorf("GOMEMLIMIT=%s is the operator's choice, but Steward would set %d", gomemlimit, soft)
		}
	}
	if soft, ok := softMemoryLimit(0, ""); ok {
		t.Errorf("without a container limit Steward must set none, got %d", soft)
	}
}

func TestApplyMemoryLimitSetsTheRuntimesLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	ApplyMemoryLimit(128<<20, "", logr.Discard())
	if got, want := debug.SetMemoryLimit(-1), int64(120795955); got != want { // 90% of 128Mi
		t.Errorf("after a 128Mi container limit the runtime's soft limit is %d, want %d", got, want)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	ApplyMemoryLimit(128<<20, "100MiB", logr.Discard())
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set Steward changed the runtime's soft limit to %d", got)
	}
}

func TestParseRequestMemory(t *testing.T) {
	tests := map[string]struct {
		in          string
		memoryLimit int64
		want        int64
		wantErr     string
	}{
		"FromTheShippedLimit":     {memoryLimit: 256 << 20, want: 96 << 20},
		"NeverBelowTheMinimum":    {memoryLimit: 64 << 20, want: 32 << 20},
		"WithoutAContainerLimit":  {want: 96 << 20},
		"Set":                     {in: "200Mi", memoryLimit: 256 << 20, want: 200 << 20},
		"NotAQuantity":            {in: "plenty", wantErr: `"plenty" is not a quantity`},
		"BelowOneMaximumReview":   {in: "16Mi", wantErr: "16Mi is below 32Mi"},
		"NegativeIsBelowTheFloor": {in: "-1", wantErr: "-1 is below 32Mi"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRequestMemory(tc.in, tc.memoryLimit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRequestMemory(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseRequestMemory(%q, %d) = %d, %v; want %d", tc.in, tc.memoryLimit, got, err, tc.want)
			}
		})
	}
}
