package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestGoInstalledReleasesSayTheirVersion(t *testing.T) {
	for module, want := range map[string]string{
		"v0.2.0":                               "v0.2.0", // go install .../cmd/steward@v0.2.0
		"v0.3.0-rc.1":                          "v0.3.0-rc.1",
		"(devel)":                              "devel", // go build in a checkout
		"v0.0.0-20261127190000-7ee2b336bf42":   "devel", // go build in a checkout, with VCS stamping
		"v0.2.1-0.20261127190000-7ee2b336bf42": "devel",
		"v0.2.0+dirty":                         "devel",
	} {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/stewardhq/steward", Version: module}}
		if got := From("devel", "", info).Version; got != want {
			t.Errorf("built as module version %s, steward version says %s; want %s", module, got, want)
		}
		if got := From("v9.9.9", "", info).Version; got != "v9.9.9" {
			t.Errorf("stamped v9.9.9 and built as module version %s, steward version says %s", module, got)
		}
	}
}
