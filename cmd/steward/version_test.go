package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stewardhq/steward/buildinfo"
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
	if err := testutil.CollectAndCompare(buildinfo.Gauge(currentBuild()), strings.NewReader(want)); err != nil {
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
