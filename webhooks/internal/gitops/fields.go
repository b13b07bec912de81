package gitops

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/object"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Undeclared is what a guard answers a person who changes only fields Git
// does not declare (the undeclaredFields setting). A service account's
// such change (an operator's, cert-manager's cainjector's) is always
// allowed: the tools keep those fields.
type Undeclared string

const (
	// UndeclaredRefuse refuses it, saying the field is not in Git and what
	// the tool does with it: the default, since a hand edit outside Git is
	// still an undocumented change of a Git-managed object.
	UndeclaredRefuse Undeclared = "refuse"
	// UndeclaredMirror answers as the tool would: allowed where the tool
	// keeps the field, refused where it strips it at its next reconcile.
	UndeclaredMirror Undeclared = "mirror"
)

// maxFieldChanges bounds the changed paths an update is read for: the
// guarded ones among them are listed, and a change beyond the bound
// counts as a change of a field Git declares.
const maxFieldChanges = 1000

// fieldSplit is an update's changes, split by whether Git declares them.
type fieldSplit struct {
	// git are the changes of fields the tool's field managers own, or of
	// every field where an owner's tool has no entry (unrecorded).
	git object.Changes
	// other are the changes of fields Git does not declare.
	other object.Changes
	// unrecorded names the field managers of an owner that has no entry
	// in the object's managedFields, when one has none.
	unrecorded string
	// entry names the tool's managedFields entry the update rewrote, when
	// no declared field changed: rewriting it would make Git's fields look
	// like someone else's.
	entry string
	// writers are the field managers the update wrote as.
	writers []string
}

// splitFields splits an update's changes (all, read up to
// maxFieldChanges) by the owners' field managers' entries in the stored
// object's managedFields, the record of what each tool applied; a change
// at or above one of markers counts as Git's.
func splitFields(old, cur *object.View, all object.Changes, owners []Owner, markers []object.Pointer) fieldSplit {
	var s fieldSplit
	before := fieldEntries(old)
	var decl []declared
	for _, o := range owners {
		d, ok := declaredBy(before, o.FieldManagers)
		if !ok {
			s.unrecorded = strings.Join(cmpOr(o.FieldManagers, []string{"its tool"}), " or ")
			s.git = listed(all)
			return s
		}
		decl = append(decl, d)
	}
	for _, path := range all.First {
		p, err := object.ParsePointer(path)
		target := &s.other
		if err != nil || intersectsAny(p, markers) || slices.ContainsFunc(decl, func(d declared) bool { return d.owns(old, p) }) {
			target = &s.git
		}
		target.Total++
		if len(target.First) < ListedPaths {
			target.First = append(target.First, path)
		}
	}
	s.git.Total += all.Total - len(all.First)
	if s.git.Total > 0 {
		return s
	}
	after := fieldEntries(cur)
	for _, o := range owners {
		if entriesChanged(before, after, o.FieldManagers) {
			s.entry = "/metadata/managedFields (the " + strings.Join(o.FieldManagers, " or ") + " entry, which records what " + o.Name + " applies from Git)"
			return s
		}
	}
	s.writers = writersOf(before, after)
	return s
}

func cmpOr(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

// listed keeps the paths a denial names of a Diff read for more.
func listed(c object.Changes) object.Changes {
	if len(c.First) > ListedPaths {
		c.First = c.First[:ListedPaths:ListedPaths]
	}
	return c
}

// fields answers an update of a managed object by what it changed: the
// decision table every guard shares (docs/security.md).
func (g *Guard) fields(req *rule.Request, ref Ref, owners []Owner, s fieldSplit) admission.Response {
	switch {
	case s.git.Total > 0:
		return admission.Denied(g.msg.changedGit(ref, owners, s))
	case s.entry != "":
		return admission.Denied(g.msg.changedAs(ref, owners, s.entry))
	case s.other.Total == 0:
		return admission.Allowed(fmt.Sprintf("no change to fields %s deploys (status, metadata bookkeeping and ignored fields are not guarded)", g.msg.tool))
	}
	writers := s.writers
	if len(writers) == 0 {
		writers = optionsManager(req)
	}
	if o, m, ok := stripping(owners, writers); ok {
		return admission.Denied(g.msg.stripped(ref, owners, s.other, o, m))
	}
	user := req.UserInfo.Username
	if ServiceAccount(req.UserInfo) {
		return admission.Allowed(fmt.Sprintf("%s changed only fields Git does not declare (%s): %s", user, ChangeList(s.other), keeps(owners)))
	}
	if g.undeclared == UndeclaredMirror && len(writers) > 0 {
		return admission.Allowed(fmt.Sprintf("%s changed only fields Git does not declare (%s), as %s: %s", user, ChangeList(s.other), strings.Join(writers, ", "), keeps(owners)))
	}
	return admission.Denied(g.msg.undeclared(ref, owners, s.other))
}

// ServiceAccount reports whether u is a service account: the cluster's
// machinery (operators, cert-manager, autoscalers), whose changes of fields
// Git does not declare the tools keep.
func ServiceAccount(u authenticationv1.UserInfo) bool {
	return strings.HasPrefix(u.Username, serviceAccountPrefix)
}

const serviceAccountPrefix = "system:serviceaccount:"

// optionsManager is the field manager the request names in its options,
// for the rare update whose managedFields entry the API server left as it
// was (the same fields, rewritten within the second).
func optionsManager(req *rule.Request) []string {
	v := object.New(req.Options.Raw)
	if m := v.String("fieldManager"); m != "" {
		return []string{m}
	}
	return nil
}

// stripping finds an owner whose tool removes what one of the writers
// wrote, even where Git does not declare it (kustomize-controller's
// kubectl and before-first-apply managers).
func stripping(owners []Owner, writers []string) (Owner, string, bool) {
	for _, o := range owners {
		for _, w := range writers {
			if slices.ContainsFunc(o.Strips, func(prefix string) bool { return strings.HasPrefix(w, prefix) }) {
				return o, w, true
			}
		}
	}
	return Owner{}, "", false
}

// keeps says what the owners' tools do with fields Git does not declare.
func keeps(owners []Owner) string {
	var parts []string
	for _, o := range owners {
		if o.Undeclared != "" && !slices.Contains(parts, o.Undeclared) {
			parts = append(parts, o.Undeclared)
		}
	}
	if len(parts) == 0 {
		return "the tool keeps them"
	}
	return strings.Join(parts, "; ")
}

// changedGit refuses a change of fields Git declares: the tool puts them
// back, so the owner's Revert is true.
func (m messages) changedGit(ref Ref, owners []Owner, s fieldSplit) string {
	what := ChangeList(s.git)
	if s.unrecorded != "" {
		what += fmt.Sprintf(" (the object's managedFields have no entry of %s, which would record the fields Git declares, so every field counts as Git's)", s.unrecorded)
	}
	return m.changedAs(ref, owners, what)
}

// undeclared refuses a person's change of fields Git does not declare:
// true to what the tool does, which is not a revert.
func (m messages) undeclared(ref Ref, owners []Owner, c object.Changes) string {
	return fmt.Sprintf("%s: %s is managed by %s. Changed: %s, which Git does not declare: %s, and the change would live only in the cluster. Hand edits of managed objects are refused; %s",
		m.rule, ref, names(owners), ChangeList(c), keeps(owners), m.instead("declare it in the Git repository instead", owners))
}

// stripped refuses a change the tool removes at its next reconcile
// although Git does not declare it, for the manager that wrote it.
func (m messages) stripped(ref Ref, owners []Owner, c object.Changes, o Owner, manager string) string {
	return fmt.Sprintf("%s: %s is managed by %s. Changed: %s, which Git does not declare, written by the field manager %s: %s removes what that manager writes at its next reconcile. %s",
		m.rule, ref, names(owners), ChangeList(c), manager, o.Name, m.instead("Declare it in the Git repository instead", owners))
}

// intersectsAny reports whether p is at, under or above one of paths.
func intersectsAny(p object.Pointer, paths []object.Pointer) bool {
	for _, f := range paths {
		if p.HasPrefix(f) || f.HasPrefix(p) {
			return true
		}
	}
	return false
}
