package gitops

import (
	"context"
	"strings"

	"github.com/stewardhq/steward/webhooks/object"
)

// Claim is what an object's ownership markers say, before any record is
// read.
type Claim struct {
	// Claims reports whether the markers claim the object for the tool.
	Claims bool
	// Keys are the ownership markers the object carries, as "label <key>"
	// or "annotation <key>", in a fixed order: those an update may not
	// strip and a create may not forge.
	Keys []string
	// Named describes the owners the markers name, for messages.
	Named string
	// NotClaimed says why markers the object carries make no claim (Fleet's
	// owner-gvk, an Argo CD tracking id copied from another object); an
	// update or delete of such an object is allowed with this reason.
	NotClaimed string
}

// Owner is one owner the markers name, as the resolver found it.
type Owner struct {
	// Name describes the owner in messages, with what says where its
	// content comes from, e.g. "Flux Kustomization flux-system/apps
	// (GitRepository flux-system/flux-system, path ./apps, revision
	// main@sha1:1a2b3c4)".
	Name string
	// Manages reports whether the owner's own record lists the object;
	// Why says why not, when it does not ("owner not found", "not in its
	// inventory").
	Manages bool
	Why     string
	// Writers are the users that write the owner's objects besides the
	// tool (a Flux tenant's service account).
	Writers []string
	// Revert says what the tool does with a hand edit: "manual changes
	// diverge from Git and Fleet reverts them".
	Revert string
	// Paused is set when the owner's reconciliation is paused: writes are
	// allowed, with a warning naming it, unless another owner reverts
	// them.
	Paused string
	// OptedOut is set when the object opted out of the tool's management
	// (an annotation the tool honours): writes are allowed with it as the
	// reason, unless another owner reverts them.
	OptedOut string
	// Skip are paths the owner itself ignores on this object. Where
	// several owners manage an object, only the paths all of them ignore
	// may change.
	Skip []object.Pointer
	// Hint is an extra way out the denial offers, e.g. how to pause the
	// tool for the object.
	Hint string
	// Undeclared says what the owner's tool does with a field Git does
	// not declare, one its field managers do not own: "kustomize-controller
	// keeps it".
	Undeclared string
	// Strips are prefixes of the field managers whose fields the owner's
	// tool removes at its next reconcile even where Git does not declare
	// them (kustomize-controller's cleanup of kubectl's and
	// before-first-apply's entries).
	Strips []string
	// FieldManagers are the field managers the owner's tool applies the
	// object with. The fields their managedFields entries own on the stored
	// object are the ones Git declares; an object with no such entry counts
	// every field as Git's. The audit reads writes after their last one as
	// drift.
	FieldManagers []string
	// LastApplied is set when the owner's tool applies client-side and
	// keeps what it applied in kubectl's last-applied-configuration
	// annotation (Argo CD): where its entries are Updates, which own the
	// API server's defaults too, Git's fields are the annotation's
	// (lastapplied.go).
	LastApplied bool
	// IgnoreIn is where the owner's tool is told to leave a field alone,
	// for drift findings: "fleet.yaml (diff.comparePatches)".
	IgnoreIn string
}

// Resolver reads one tool's ownership of objects.
type Resolver interface {
	// Claim reads the markers of the object v, which ref names.
	Claim(ref Ref, v *object.View) Claim
	// Owners looks up the owners a claimed object's markers name. It
	// returns an error only when it cannot tell (a cache not synced): the
	// webhook's failure policy decides then.
	Owners(ctx context.Context, ref Ref, v *object.View) ([]Owner, error)
}

// IgnorePaths reads the JSON pointers of one of an owner's ignore rules
// (a Kustomization's spec.ignore, an Application's ignoreDifferences) as
// the API server stores them, for Owner.Skip: a pointer that does not
// parse, and the empty one, which would be the whole object, are left
// out.
func IgnorePaths(list any) []object.Pointer {
	items, _ := list.([]any)
	var out []object.Pointer
	for _, item := range items {
		if s, ok := item.(string); ok {
			if p, err := object.ParsePointer(s); err == nil && len(p) > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// managers names the owner's field managers in messages: "argocd-controller
// or argocd-application-controller".
func (o Owner) managers() string {
	if len(o.FieldManagers) == 0 {
		return "its tool"
	}
	return strings.Join(o.FieldManagers, " or ")
}
