package gitops

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// ListedPaths is how many changed paths a denial names before "and N
// more".
const ListedPaths = 5

// messages builds one guard's denials, all in one style: the rule, the
// object, its owners and what their tool does with the change, what was
// refused, and where the change belongs.
//
// The denials every refused edit and delete returns (changedAs, deleting)
// are written into one builder: formatting each part as a string of its
// own and then the whole cost a refusal about as much as judging it.
type messages struct {
	rule string
	// tool names the GitOps tool ("Fleet"), agent its writer ("the Fleet
	// agent"), applier who applies its objects in drift findings.
	tool, agent, applier string
	// breakGlass is the configured group, if any.
	breakGlass string
}

// denialRoom is what a denial's builder starts with: room for the usual
// one, so that it is written without growing.
const denialRoom = 384

func (m messages) emergency() string {
	var b strings.Builder
	m.writeEmergency(&b)
	return b.String()
}

func (m messages) writeEmergency(b *strings.Builder) {
	if m.breakGlass == "" {
		b.WriteByte('.')
		return
	}
	b.WriteString("; in an emergency repeat the request as a member of ")
	b.WriteString(m.breakGlass)
	b.WriteByte('.')
}

// instead is where a refused change belongs, and the ways out.
func (m messages) instead(what string, owners []Owner) string {
	var b strings.Builder
	m.writeInstead(&b, what, owners)
	return b.String()
}

func (m messages) writeInstead(b *strings.Builder, what string, owners []Owner) {
	b.WriteString(what)
	for _, o := range owners {
		if o.Hint != "" {
			b.WriteString("; ")
			b.WriteString(o.Hint)
			break
		}
	}
	m.writeEmergency(b)
}

// managedBy is the first sentence of every denial about a managed object.
func (m messages) managedBy(ref Ref, owners []Owner) string {
	var b strings.Builder
	m.writeManagedBy(&b, ref, owners)
	return b.String()
}

func (m messages) writeManagedBy(b *strings.Builder, ref Ref, owners []Owner) {
	b.WriteString(m.rule)
	b.WriteString(": ")
	ref.write(b)
	b.WriteString(" is managed by ")
	writeNames(b, owners)
	b.WriteString("; ")
	if len(owners) > 0 {
		b.WriteString(owners[0].Revert)
	}
	b.WriteByte('.')
}

// ManagedBy is the first sentence of the guard's denials, for findings
// that speak of a managed object the same way.
func (g *Guard) ManagedBy(ref Ref, owners []Owner) string { return g.msg.managedBy(ref, owners) }

// names joins the owners' names for a message.
func names(owners []Owner) string {
	var b strings.Builder
	writeNames(&b, owners)
	return b.String()
}

func writeNames(b *strings.Builder, owners []Owner) {
	for i, o := range owners {
		if i > 0 {
			b.WriteString(" and ")
		}
		b.WriteString(o.Name)
	}
}

// changedAs refuses an update of a managed object for a change named in
// words rather than paths.
func (m messages) changedAs(ref Ref, owners []Owner, what string) string {
	return m.changed(ref, owners, func(b *strings.Builder) { b.WriteString(what) })
}

// changedPaths refuses an update of a managed object for the changed
// paths c names.
func (m messages) changedPaths(ref Ref, owners []Owner, c object.Changes) string {
	return m.changed(ref, owners, func(b *strings.Builder) { writeChangeList(b, c) })
}

// changed is changedAs, with what changed written by what.
func (m messages) changed(ref Ref, owners []Owner, what func(*strings.Builder)) string {
	var b strings.Builder
	b.Grow(denialRoom)
	m.writeManagedBy(&b, ref, owners)
	b.WriteString(" Changed: ")
	what(&b)
	b.WriteString(". ")
	m.writeInstead(&b, "Change it in the Git repository instead", owners)
	return b.String()
}

// ChangeList names the first changed paths and how many more there are.
func ChangeList(c object.Changes) string {
	var b strings.Builder
	writeChangeList(&b, c)
	return b.String()
}

func writeChangeList(b *strings.Builder, c object.Changes) {
	for i, p := range c.First {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	if more := c.Total - len(c.First); more > 0 {
		if len(c.First) > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("and ")
		b.WriteString(strconv.Itoa(more))
		b.WriteString(" more")
	}
}

// deleting refuses the deletion of a managed object.
func (m messages) deleting(ref Ref, owners []Owner) string {
	var b strings.Builder
	b.Grow(denialRoom)
	m.writeManagedBy(&b, ref, owners)
	b.WriteString(" Deleting it is refused: ")
	b.WriteString(m.tool)
	b.WriteString(" would re-create it. ")
	m.writeInstead(&b, "Remove it from the Git repository instead", owners)
	return b.String()
}

// stripping refuses an update that removes the tool's ownership markers.
func (m messages) stripping(ref Ref, owners []Owner, keys []string) string {
	return fmt.Sprintf("%s Removing %s's ownership %s is refused: it would hide the object from %s while it still runs as deployed from Git. %s",
		m.managedBy(ref, owners), m.tool, strings.Join(keys, " and "), m.tool, m.instead("Change it in the Git repository instead", owners))
}

// spoofing refuses a create, or an update of an unclaimed object, that
// sets the tool's ownership markers: only the tool may claim an object.
func (m messages) spoofing(ref Ref, verb string, c Claim) string {
	return fmt.Sprintf("%s: %s %s %s's ownership %s (%s), which only %s sets; a hand-made object with them passes for Git-managed, and %s may prune or overwrite it. Remove %s's keys, or add the object to the Git repository instead%s",
		m.rule, ref, verb, m.tool, strings.Join(c.Keys, " and "), c.Named, m.agent, m.tool, m.tool, m.emergency())
}

// addingOwners refuses an update that gives a managed object new owners.
func (m messages) addingOwners(ref Ref, owners []Owner, added []metav1.OwnerReference) string {
	refs := make([]string, len(added))
	for i, o := range added {
		refs[i] = o.Kind + " " + o.Name
	}
	return fmt.Sprintf("%s Adding the owner reference %s is refused: the garbage collector would delete the object when that owner is deleted, outside Git. %s",
		m.managedBy(ref, owners), strings.Join(refs, ", "), m.instead("Change it in the Git repository instead", owners))
}

// optOutRefused refuses an opt-out added by someone outside the opt-out
// groups, or together with other changes.
func (m messages) optOutRefused(ref Ref, owners []Owner, c object.Changes, groups []string) string {
	who := "nobody: no opt-out group is configured"
	if len(groups) > 0 {
		who = "only members of " + strings.Join(groups, ", ") + ", as a change of its own"
	}
	return fmt.Sprintf("%s Adding an opt-out (%s) is refused: it stops %s from managing the object, and may be set by %s. %s",
		m.managedBy(ref, owners), ChangeList(c), m.tool, who, m.instead("Change it in the Git repository instead", owners))
}
