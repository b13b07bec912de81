package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestVersionPrintsTheStampedBuild(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3", "0123abcd"
	for _, arg := range []string{"version", "--version"} {
		var out bytes.Buffer
		if code := run([]string{arg}, &out, &out); code != 0 {
			t.Fatalf("steward %s exited %d", arg, code)
		}
		if !strings.HasPrefix(out.String(), "steward v1.2.3\nrevision: 0123abcd\ngo: go") {
			t.Errorf("steward %s printed:\n%s", arg, out.String())
		}
	}
	want := `# HELP steward_build_info Steward's build: version, VCS revision and Go version; always 1.
# TYPE steward_build_info gauge
steward_build_info{goversion="` + currentBuild().GoVersion + `",revision="0123abcd",version="v1.2.3"} 1
`
	if err := testutil.CollectAndCompare(buildInfoGauge(currentBuild()), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestUnstampedBuildsSayDevel(t *testing.T) {
	defer func(r string) { revision = r }(revision)
	revision = ""
	if b := currentBuild(); b.Version != "devel" || b.Revision == "" {
		t.Errorf("an unstamped build = %+v, want version devel and a revision (or unknown)", b)
	}
}

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
		if got := buildFrom("devel", "", info).Version; got != want {
			t.Errorf("built as module version %s, steward version says %s; want %s", module, got, want)
		}
		if got := buildFrom("v9.9.9", "", info).Version; got != "v9.9.9" {
			t.Errorf("stamped v9.9.9 and built as module version %s, steward version says %s", module, got)
		}
	}
}
