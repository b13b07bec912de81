package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/manifests"
)

// releaseConfig is the part of .goreleaser.yaml that has to agree with the
// Makefile, the Dockerfile and the manifests. `goreleaser check` (make
// verify) validates the whole file against GoReleaser's schema; this test
// checks what the schema cannot: that a released steward is stamped and
// shipped the way the rest of the repository builds it.
type releaseConfig struct {
	Version int `json:"version"`
	Builds  []struct {
		ID      string   `json:"id"`
		Main    string   `json:"main"`
		Binary  string   `json:"binary"`
		Env     []string `json:"env"`
		Flags   []string `json:"flags"`
		Ldflags []string `json:"ldflags"`
		Goos    []string `json:"goos"`
		Goarch  []string `json:"goarch"`
	} `json:"builds"`
	DockersV2 []struct {
		Dockerfile string   `json:"dockerfile"`
		Images     []string `json:"images"`
		Platforms  []string `json:"platforms"`
		Flags      []string `json:"flags"`
		SBOM       string   `json:"sbom"`
	} `json:"dockers_v2"`
	Before struct {
		Hooks []string `json:"hooks"`
	} `json:"before"`
	SBOMs       []releaseSBOM `json:"sboms"`
	Signs       []releaseSign `json:"signs"`
	DockerSigns []releaseSign `json:"docker_signs"`
}

type releaseSBOM struct {
	Cmd       string `json:"cmd"`
	Artifacts string `json:"artifacts"`
}

type releaseSign struct {
	Cmd       string   `json:"cmd"`
	Artifacts string   `json:"artifacts"`
	Args      []string `json:"args"`
}

func readReleaseConfig(t *testing.T) releaseConfig {
	t.Helper()
	raw, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatalf("reading .goreleaser.yaml: %v", err)
	}
	var c releaseConfig
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("parsing .goreleaser.yaml: %v", err)
	}
	return c
}

// stampedVars returns the variables an -ldflags value sets with -X, in order.
func stampedVars(ldflags string) []string {
	var vars []string
	for _, m := range regexp.MustCompile(`-X ([^=\s]+)=`).FindAllStringSubmatch(ldflags, -1) {
		vars = append(vars, m[1])
	}
	return vars
}

func TestReleaseBuildsSteward(t *testing.T) {
	c := readReleaseConfig(t)
	if c.Version != 2 {
		t.Errorf("version: %d, want 2 (GoReleaser v2's schema)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("builds: %d, want the one steward build", len(c.Builds))
	}
	b := c.Builds[0]
	if b.Main != "./cmd/steward" || b.Binary != "steward" {
		t.Errorf("build main %q binary %q, want ./cmd/steward and steward", b.Main, b.Binary)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0, as the Dockerfile builds a static binary", b.Env)
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build flags %v: want -trimpath", b.Flags)
	}
	if diff := cmp.Diff([]string{"linux", "darwin"}, b.Goos); diff != "" {
		t.Errorf("goos (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"amd64", "arm64"}, b.Goarch); diff != "" {
		t.Errorf("goarch (-want +got):\n%s", diff)
	}

	// The Makefile and the Dockerfile stamp main.version and main.revision
	// (version.go); a release must stamp the same, or `steward version` and
	// steward_build_info report "devel".
	want := []string{"main.version", "main.revision"}
	if diff := cmp.Diff(want, stampedVars(strings.Join(b.Ldflags, " "))); diff != "" {
		t.Errorf(".goreleaser.yaml ldflags stamp (-want +got):\n%s", diff)
	}
	for file, line := range map[string]*regexp.Regexp{
		"../../Makefile":   regexp.MustCompile(`(?m)^STEWARD_LDFLAGS :=.*$`),
		"../../Dockerfile": regexp.MustCompile(`(?m)^\s*-ldflags .*$`),
	} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ldflags := line.Find(raw)
		if ldflags == nil {
			t.Errorf("%s: no line matches %s", file, line)
			continue
		}
		if diff := cmp.Diff(want, stampedVars(string(ldflags))); diff != "" {
			t.Errorf("%s stamps (-want +got):\n%s", file, diff)
		}
	}
}

func TestReleaseImageMatchesManifests(t *testing.T) {
	c := readReleaseConfig(t)
	if len(c.DockersV2) != 1 {
		t.Fatalf("dockers_v2: %d, want the one steward image", len(c.DockersV2))
	}
	d := c.DockersV2[0]
	repository, _, _ := strings.Cut(manifests.DefaultImage, ":")
	if diff := cmp.Diff([]string{repository}, d.Images); diff != "" {
		t.Errorf("images, want the repository the manifests run (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, d.Platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}

	// The image is the Dockerfile's release stage, which copies the binaries
	// GoReleaser built; both its stages run on digest-pinned base images.
	if !slices.Contains(d.Flags, "--target=release") {
		t.Errorf("dockers_v2 flags %v: want --target=release", d.Flags)
	}
	raw, err := os.ReadFile("../../" + d.Dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(raw)
	if !regexp.MustCompile(`(?m)^FROM \S+ AS release$`).MatchString(dockerfile) {
		t.Errorf("%s has no stage named release", d.Dockerfile)
	}
	if !strings.Contains(dockerfile, "COPY $TARGETPLATFORM/steward /steward") {
		t.Errorf("%s's release stage does not copy $TARGETPLATFORM/steward, where GoReleaser puts the binaries", d.Dockerfile)
	}
	for _, m := range regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`).FindAllStringSubmatch(dockerfile, -1) {
		image := m[1]
		if image == "runtime" {
			continue
		}
		if !regexp.MustCompile(`^[^@]+:[^@]+@sha256:[0-9a-f]{64}$`).MatchString(image) {
			t.Errorf("%s: base image %s is not pinned by tag and digest", d.Dockerfile, image)
		}
	}
}

func TestReleasePackagesChart(t *testing.T) {
	c := readReleaseConfig(t)
	if !slices.ContainsFunc(c.Before.Hooks, func(h string) bool { return strings.HasPrefix(h, "make chart-package ") }) {
		t.Errorf("before hooks %v: want make chart-package, which packages charts/steward", c.Before.Hooks)
	}
}

// TestReleaseIsSignedKeylessWithSBOMs keeps what docs/install.md tells users
// to verify: an SBOM per archive and for the image, checksums.txt signed
// into a Sigstore bundle, and the images signed by digest, all with cosign
// and no key (the release workflow's OIDC identity is the signer).
func TestReleaseIsSignedKeylessWithSBOMs(t *testing.T) {
	c := readReleaseConfig(t)
	if !slices.Contains(c.SBOMs, releaseSBOM{Cmd: "syft", Artifacts: "archive"}) {
		t.Errorf("sboms %+v: want syft over every archive", c.SBOMs)
	}
	if len(c.DockersV2) != 1 || c.DockersV2[0].SBOM != "true" {
		t.Errorf("dockers_v2: want sbom: true, the image's SBOM attestation")
	}
	keyless := func(what string, signs []releaseSign, artifacts string, args ...string) {
		t.Helper()
		if len(signs) != 1 {
			t.Fatalf("%s: %d entries, want one", what, len(signs))
		}
		s := signs[0]
		if s.Cmd != "cosign" || s.Artifacts != artifacts || !slices.Equal(s.Args, args) {
			t.Errorf("%s: cmd %q artifacts %q args %q; want cosign, %q, %q", what, s.Cmd, s.Artifacts, s.Args, artifacts, args)
		}
	}
	keyless("signs", c.Signs, "checksum", "sign-blob", "--bundle=${signature}", "${artifact}")
	keyless("docker_signs", c.DockerSigns, "", "sign", "${artifact}@${digest}")
}
