package gitops

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// at or above one of markers counts as Git's. skip are the paths the
// update may change, whose fields may leave the tool's entries.
func splitFields(old, cur *object.View, all object.Changes, owners []Owner, markers, skip []object.Pointer) fieldSplit {
	var s fieldSplit
	// Most objects have a handful of managedFields entries and one or two
	// owners: read into room on the stack.
	var entryRoom [8]entry
	var declRoom [2]declared
	before := fieldEntries(old, entryRoom[:0])
	decl := declRoom[:0]
	for _, o := range owners {
		d, ok := declaredFor(before, o, old, nil)
		if !ok {
			s.unrecorded = o.managers()
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
	var afterRoom [8]entry
	after := fieldEntries(cur, afterRoom[:0])
	for _, o := range owners {
		if rewritten(old, cur, before, after, o.FieldManagers, skip) {
			s.entry = "/metadata/managedFields (the " + o.managers() + " entry, which records what " + o.Name + " applies from Git)"
			return s
		}
	}
	s.writers = writersOf(before, after)
	return s
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
	if g.machinery(req.UserInfo) {
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

// machinery reports whether u is the cluster's machinery: a service
// account that does not write people's edits.
func (g *Guard) machinery(u authenticationv1.UserInfo) bool {
	return ServiceAccount(u) && !slices.Contains(g.people, u.Username)
}

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
	msg := m.changedPaths(ref, owners, s.git)
	if s.unrecorded == "" {
		return msg
	}
	// The note follows the changed paths' sentence, which stays as it is.
	cut := strings.Index(msg, ". Change it in the Git repository instead")
	note := fmt.Sprintf(". Every field counts as Git's: the object's managedFields have no entry of %s, which would record the fields Git declares", s.unrecorded)
	return msg[:cut+1] + note[1:] + msg[cut:]
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
	stripper := m.tool
	if len(o.FieldManagers) > 0 {
		stripper = o.FieldManagers[0]
	}
	return fmt.Sprintf("%s: %s is managed by %s. Changed: %s, which Git does not declare, written by the field manager %s: %s removes what that manager writes at its next reconcile. %s",
		m.rule, ref, names(owners), ChangeList(c), manager, stripper, m.instead("Declare it in the Git repository instead", owners))
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

// Git's fields are read from the tool's own record: the API server keeps,
// per field manager, the fields each one set (managedFields). The fields
// the tool's managers own on the stored object (the request's oldObject)
// are what it applies from Git and puts back; a field only someone else
// set is not in Git, and what the tool does with it depends on the tool
// (Owner.Undeclared). The record is read in place, with the object view's
// JSON reader: a review's managedFields are most of its metadata, and
// decoding them would cost a refusal several times what the rest does.

// declared are the fields the tool's field managers own on an object, as
// their managedFields entries of the main resource record them.
type declared struct {
	// trees are the entries' fieldsV1 documents, as written.
	trees [][]byte
	// manifest, when set, is the manifest the tool applied client-side,
	// read instead of trees, and record the field that holds it, which
	// counts as Git's (lastapplied.go).
	manifest []byte
	record   object.Pointer
}

// entry is one managedFields entry, as the guards read it: every member
// as written, in the review's own bytes (the API server writes these
// strings unescaped).
type entry struct {
	Manager, Operation, Subresource, Time, FieldsV1 []byte
}

// of reports whether the entry is one of managers' of the main resource.
func (e entry) of(managers []string) bool {
	return len(e.Subresource) == 0 && slices.ContainsFunc(managers, func(m string) bool { return m == string(e.Manager) })
}

// fieldEntries appends an object's managedFields entries to out.
func fieldEntries(v *object.View, out []entry) []entry {
	raw := v.Field("metadata", "managedFields")
	if raw == nil {
		return out
	}
	var elems, members [16]object.Member
	list := v.Elements(raw, elems[:0])
	for _, el := range list {
		var e entry
		for _, m := range v.Members(el.Value, members[:0]) {
			switch string(m.Key) {
			case "manager":
				e.Manager = inner(m.Value)
			case "operation":
				e.Operation = inner(m.Value)
			case "subresource":
				e.Subresource = inner(m.Value)
			case "time":
				e.Time = inner(m.Value)
			case "fieldsV1":
				e.FieldsV1 = m.Value
			}
		}
		out = append(out, e)
	}
	return out
}

// inner is a JSON string's text as written, nil for any other value.
func inner(raw []byte) []byte {
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	return raw[1 : len(raw)-1]
}

// entriesOf turns typed entries (a fetched object's) into the guards'
// form.
func entriesOf(typed []metav1.ManagedFieldsEntry) []entry {
	out := make([]entry, len(typed))
	for i, e := range typed {
		out[i] = entry{Manager: []byte(e.Manager), Operation: []byte(e.Operation), Subresource: []byte(e.Subresource)}
		if e.FieldsV1 != nil {
			out[i].FieldsV1 = e.FieldsV1.GetRawBytes()
		}
	}
	return out
}

// declaredBy reads the fields managers own in entries. ok is false when
// none of the managers has an entry of the main resource: the object was
// written before the tool recorded itself (or by another tool), and
// nothing tells Git's fields from others'.
func declaredBy(entries []entry, managers []string) (d declared, ok bool) {
	for _, e := range entries {
		if !e.of(managers) {
			continue
		}
		ok = true
		if e.FieldsV1 != nil {
			d.trees = append(d.trees, e.FieldsV1)
		}
	}
	return d, ok
}

// declaredFor reads the fields o's tool declares on an object whose
// managedFields are entries: its field managers' entries, or, for a tool
// that applies client-side and records what it applied (Owner.LastApplied)
// while its entries are Updates, the last-applied annotation of the
// object's view v, or of annotations without one (lastapplied.go).
func declaredFor(entries []entry, o Owner, v *object.View, annotations map[string]string) (declared, bool) {
	d, ok := declaredBy(entries, o.FieldManagers)
	if !ok || !o.LastApplied || appliedServerSide(entries, o.FieldManagers) {
		return d, ok
	}
	if last, ok := lastAppliedDeclared(v, annotations); ok {
		return last, true
	}
	return d, true
}

// owns reports whether the managers own the field at p of v, or a field
// above or below it: a change there changes what the tool applies.
func (d declared) owns(v *object.View, p object.Pointer) bool {
	if d.record != nil && intersectsAny(p, []object.Pointer{d.record}) {
		return true
	}
	if d.manifest != nil {
		return ownsInManifest(d.manifest, v, p)
	}
	for _, t := range d.trees {
		if ownsIn(t, v, p) {
			return true
		}
	}
	return false
}

// ownsIn follows p through one fieldsV1 tree. Reaching the end of p, or a
// leaf of the tree (a field owned as a whole) on the way, means owned; a
// token the tree has no key for means not.
func ownsIn(tree []byte, v *object.View, p object.Pointer) bool {
	var buf [16]object.Member
	var key [64]byte
	node := tree
	for i, tok := range p {
		if object.Hollow(node) {
			return true // an atomic field above p
		}
		var child []byte
		var ok bool
		if isIndex(tok) {
			child, ok = childOf(v.Members(node, buf[:0]), v, p[:i], tok)
		} else {
			// Only a member's key names a token that is no index: found
			// without splitting the members after it.
			child, ok = v.Member(node, append(append(key[:0], "f:"...), tok...))
		}
		if !ok {
			return false
		}
		node = child
	}
	return true
}

// childOf finds the fieldsV1 member for token tok under the object's
// field at parent: "f:<tok>" for a member, "i:<tok>" for an atomic list's
// index, and for a list known by keys or values ("k:{...}", "v:..."), the
// key that matches the item at index tok of the stored object.
func childOf(members []object.Member, v *object.View, parent object.Pointer, tok string) ([]byte, bool) {
	var item []byte
	loaded := false
	for _, m := range members {
		k := m.Key
		if len(k) < 2 || k[1] != ':' {
			continue
		}
		switch k[0] {
		case 'f':
			if string(k[2:]) == tok {
				return m.Value, true
			}
		case 'i':
			if string(k[2:]) == tok {
				return m.Value, true
			}
		case 'k', 'v':
			if !loaded {
				item, loaded = listItem(v, parent, tok), true
			}
			if item != nil && itemMatches(v, item, k) {
				return m.Value, true
			}
		}
	}
	return nil, false
}

// listItem is the item at index tok of the list at p in v; nil when
// there is none.
func listItem(v *object.View, p object.Pointer, tok string) []byte {
	if !isIndex(tok) {
		return nil
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		return nil
	}
	var buf [16]object.Member
	items := v.Elements(fieldAt(v, p), buf[:0])
	if i >= len(items) {
		return nil
	}
	return items[i].Value
}

// fieldAt is the raw value at p, through lists as well as objects.
func fieldAt(v *object.View, p object.Pointer) []byte {
	// The longest prefix of object members the view reads itself.
	n := 0
	for n < len(p) && !isIndex(p[n]) {
		n++
	}
	raw := v.Field(p[:n]...)
	var buf [16]object.Member
	for _, tok := range p[n:] {
		if raw == nil {
			return nil
		}
		next := []byte(nil)
		if i, err := strconv.Atoi(tok); isIndex(tok) && err == nil {
			if items := v.Elements(raw, buf[:0]); i >= 0 && i < len(items) {
				next = items[i].Value
			}
		} else {
			for _, m := range v.Members(raw, buf[:0]) {
				if string(m.Key) == tok {
					next = m.Value // the last of repeated keys wins
				}
			}
		}
		raw = next
	}
	return raw
}

// isIndex reports whether a pointer token is a list index: digits only,
// told apart without strconv's error for every member name.
func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// itemMatches reports whether a list item of v is the one a fieldsV1 key
// names: "k:{...}" by its key fields' values, "v:..." by its value.
func itemMatches(v *object.View, item, key []byte) bool {
	want := key[2:]
	if key[0] == 'v' {
		return object.SameScalar(item, want)
	}
	var kb, ib [8]object.Member
	keys := v.Members(want, kb[:0])
	if len(keys) == 0 {
		return false
	}
	fields := v.Members(item, ib[:0])
	for _, k := range keys {
		found := false
		for _, f := range fields {
			if string(f.Key) == string(k.Key) && object.SameScalar(f.Value, k.Value) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// rewritten reports whether an update takes fields out of the managers'
// entries that it does not change: the API server moves a field out of
// the tool's entry when someone else changes it (an ignored field), so
// only the rest is a rewrite of the record itself (managedFields emptied,
// or an entry edited), which would make Git's fields look like someone
// else's. A field that no longer maps onto the stored object counts as
// rewritten.
func rewritten(old, cur *object.View, before, after []entry, managers []string, skip []object.Pointer) bool {
	if sameEntries(before, after, managers) {
		return false // the common case: the write left the tool's entries alone
	}
	kept := map[string]bool{}
	for _, k := range ownedKeys(cur, after, managers) {
		kept[strings.Join(k, "\x00")] = true
	}
	for _, k := range ownedKeys(old, before, managers) {
		if kept[strings.Join(k, "\x00")] {
			continue
		}
		p, ok := pointerOf(old, k)
		if !ok || !Skipped(p, skip) {
			return true
		}
	}
	return false
}

// ownedKeys lists the fieldsV1 key paths the managers' entries of the
// main resource own (entries of v's managedFields): every leaf, and every
// item owned as itself (".").
func ownedKeys(v *object.View, entries []entry, managers []string) [][]string {
	var k keyPaths
	for _, e := range entries {
		if e.of(managers) && e.FieldsV1 != nil {
			walkFields(e.FieldsV1, 0, 0, v.Members, &k)
		}
	}
	return k.out
}

// keyPaths collects the key paths of the fields a fieldsV1 tree owns (a
// fieldsVisitor).
type keyPaths struct {
	path []string
	out  [][]string
}

func (k *keyPaths) enter(key []byte) bool {
	k.path = append(k.path, string(key))
	return true
}

func (k *keyPaths) leave() { k.path = k.path[:len(k.path)-1] }

func (k *keyPaths) owned(bool) { k.out = append(k.out, slices.Clone(k.path)) }

// pointerOf turns a fieldsV1 key path into a pointer into v, finding
// list items known by keys or values among v's; false when v has no such
// item.
func pointerOf(v *object.View, keys []string) (object.Pointer, bool) {
	p := object.Pointer{}
	var buf [16]object.Member
	for _, k := range keys {
		if len(k) < 2 || k[1] != ':' {
			return nil, false
		}
		switch k[0] {
		case 'f', 'i':
			p = append(p, k[2:])
			continue
		case 'k', 'v':
		default:
			return nil, false
		}
		found := false
		for i, item := range v.Elements(fieldAt(v, p), buf[:0]) {
			if itemMatches(v, item.Value, []byte(k)) {
				p, found = append(p, strconv.Itoa(i)), true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return p, true
}

// sameEntries reports whether the managers' entries of the main resource
// own the same fields in both lists, in the same order.
func sameEntries(before, after []entry, managers []string) bool {
	own := func(e entry) bool { return e.of(managers) }
	i, j := 0, 0
	for {
		for i < len(before) && !own(before[i]) {
			i++
		}
		for j < len(after) && !own(after[j]) {
			j++
		}
		if i == len(before) || j == len(after) {
			return i == len(before) && j == len(after)
		}
		a, b := before[i], after[j]
		if !bytes.Equal(a.Manager, b.Manager) || !bytes.Equal(a.Operation, b.Operation) || !bytes.Equal(a.FieldsV1, b.FieldsV1) {
			return false
		}
		i, j = i+1, j+1
	}
}

// writersOf are the field managers an update wrote as: the entries of the
// main resource that are new, or whose fields or time changed. The API
// server records the request's manager before admission, so the
// review's object already carries it.
func writersOf(old, cur []entry) []string {
	var out []string
	for _, e := range cur {
		if len(e.Subresource) != 0 {
			continue
		}
		i := slices.IndexFunc(old, func(o entry) bool {
			return bytes.Equal(o.Manager, e.Manager) && bytes.Equal(o.Operation, e.Operation) && len(o.Subresource) == 0
		})
		if i < 0 || !bytes.Equal(old[i].FieldsV1, e.FieldsV1) || !bytes.Equal(old[i].Time, e.Time) {
			if m := string(e.Manager); !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}
