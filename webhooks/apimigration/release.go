package apimigration

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Release is a Flux minor release, such as 2.8. API versions are removed in
// minor releases, so patch numbers never matter to this rule.
type Release struct {
	Major, Minor int
}

// releasePattern accepts what people copy from `flux version` or release
// notes: "2.8", "v2.8", "2.8.1", "v2.8.0".
var releasePattern = regexp.MustCompile(`^v?([0-9]{1,3})\.([0-9]{1,3})(\.[0-9]{1,4})?$`)

// ReleasePattern is the regular expression (Go's syntax, which JSON
// schemas' patterns share here) of what ParseRelease reads; Flux 1
// releases match it too.
func ReleasePattern() string { return releasePattern.String() }

// ParseRelease reads a Flux release such as "2.8" or "v2.8.1". Flux 1 had no
// toolkit APIs, so a major version below 2 is refused rather than compared.
func ParseRelease(s string) (Release, error) {
	m := releasePattern.FindStringSubmatch(s)
	if m == nil {
		return Release{}, errors.New("not a Flux release: write MAJOR.MINOR, for example \"2.8\"")
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 2 {
		return Release{}, errors.New("not a Flux 2 release: the toolkit APIs start with Flux 2.0")
	}
	return Release{Major: major, Minor: minor}, nil
}

// MustParseRelease is ParseRelease for the constant table; it panics on a
// typo so the table cannot ship broken.
func MustParseRelease(s string) Release {
	r, err := ParseRelease(s)
	if err != nil {
		panic(fmt.Sprintf("release %q: %v", s, err))
	}
	return r
}

// String prints the release as MAJOR.MINOR, the way Flux names its releases.
func (r Release) String() string {
	return strconv.Itoa(r.Major) + "." + strconv.Itoa(r.Minor)
}

// AtLeast reports whether r is the same release as o or a later one.
func (r Release) AtLeast(o Release) bool {
	if r.Major != o.Major {
		return r.Major > o.Major
	}
	return r.Minor >= o.Minor
}
