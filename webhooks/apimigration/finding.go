package apimigration

import "fmt"

// Status is what one API version means under the target Flux release.
type Status int

const (
	// Untouched: not a Flux kind this rule knows, the version the target
	// prefers (or another it serves and keeps), or a version no release in
	// the table serves. Steward leaves such writes alone.
	Untouched Status = iota
	// DeprecatedVersion: still served by the target release; the write is
	// allowed, annotated and warned about.
	DeprecatedVersion
	// RemovedVersion: the target release no longer serves it; the write is
	// refused.
	RemovedVersion
)

// String names the status the way `steward check` prints it.
func (s Status) String() string {
	switch s {
	case DeprecatedVersion:
		return "deprecated"
	case RemovedVersion:
		return "removed"
	}
	return "current"
}

// Finding is the decision for one object written, or declared, through an
// API version. The webhook and `steward check` both get it from Classify.
type Finding struct {
	Status Status
	// API is the Flux kind; nil when Status is Untouched because the kind
	// is not a Flux kind.
	API *API
	// Version is the version the client used.
	Version string
	// RemovedIn is the release that removes (or removed) Version; zero
	// when no release in the table removes a deprecated version.
	RemovedIn Release
	// Use is the version the target release prefers: the one to write
	// instead, and the only one a write is marked toward.
	Use string
	// Target is the Flux release the decision was made against.
	Target Release
	// TargetName names the target in messages when it is not Target
	// alone: the releases the cluster may run ("2.8 to 2.10"), when its
	// CRDs cannot tell which. Empty means Target.
	TargetName string
}

// targetName is the target as messages name it.
func (f Finding) targetName() string {
	if f.TargetName != "" {
		return f.TargetName
	}
	return f.Target.String()
}

// Classify decides what a write through group/version of kind means when
// the cluster runs, or is about to run, the target Flux release.
func Classify(group, kind, version string, target Release) Finding {
	f := Finding{Status: Untouched, API: LookupKind(group, kind), Version: version, Target: target}
	if f.API == nil {
		return f
	}
	f.Use = f.API.Preferred(target)
	f.Status, f.RemovedIn = f.API.status(version, target)
	return f
}

// migrate reports whether the target's Flux CLI has `flux migrate`, the
// upstream command the messages advise.
func (f Finding) migrate() bool {
	return f.Target.AtLeast(FluxMigrateSince())
}

// removal is " and removed in Flux X" for a deprecated version whose
// removal the table records, else "".
func (f Finding) removal() string {
	if f.RemovedIn == (Release{}) {
		return ""
	}
	return " and removed in Flux " + f.RemovedIn.String()
}

// From is the group/version the client used, as written in apiVersion.
func (f Finding) From() string {
	return f.API.Group + "/" + f.Version
}

// To is the group/version the client should use instead.
func (f Finding) To() string {
	return f.API.Group + "/" + f.Use
}

// Warning is the admission warning for a write through a deprecated
// version. kubectl prints it on one line, so it is kept to 120 characters
// for every entry of the table (a test holds it to that): it names the
// version used, the release that removes it, the version to use and the
// upstream migration command when the target's Flux CLI has it.
func (f Finding) Warning() string {
	w := Name + ": " + f.From() + " is deprecated" + f.removal() + "; use " + f.Use
	if f.migrate() {
		w += " (flux migrate)"
	}
	return w
}

// Refusal is the denial message for a write through a removed version.
// object is "Kind namespace/name"; source, when known, names the Flux
// object that applied it, which is where the manifest must change.
func (f Finding) Refusal(object, source string) string {
	where := "in the manifest it comes from"
	if source != "" {
		where = "in the manifest " + source + " applies"
	}
	msg := Name + ": " + object + " is written through " + f.From() + ", which Flux " + f.RemovedIn.String() +
		" removed (this cluster targets Flux " + f.targetName() + "); change apiVersion to " + f.To() + " " + where
	if f.migrate() {
		msg += " (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"
	}
	return msg
}

// Advice is what `steward check` prints for a finding: what is wrong and
// what to change it to.
func (f Finding) Advice() string {
	switch f.Status {
	case RemovedVersion:
		return fmt.Sprintf("%s was removed in Flux %s (target %s): change apiVersion to %s", f.From(), f.RemovedIn, f.targetName(), f.To())
	case DeprecatedVersion:
		return fmt.Sprintf("%s is deprecated%s: change apiVersion to %s", f.From(), f.removal(), f.To())
	}
	return ""
}
