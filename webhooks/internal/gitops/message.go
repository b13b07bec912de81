package gitops

import (
	"fmt"
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
type messages struct {
	rule string
	// tool names the GitOps tool ("Fleet"), agent its writer ("the Fleet
	// agent"), applier who applies its objects in drift findings.
	tool, agent, applier string
	// breakGlass is the configured group, if any.
	breakGlass string
}

func (m messages) emergency() string {
	if m.breakGlass == "" {
		return "."
	}
	return "; in an emergency repeat the request as a member of " + m.breakGlass + "."
}

// instead is where a refused change belongs, and the ways out.
func (m messages) instead(what string, owners []Owner) string {
	s := what
	for _, o := range owners {
		if o.Hint != "" {
			s += "; " + o.Hint
			break
		}
	}
	return s + m.emergency()
}

// ManagedBy is the first sentence of every denial about a managed object.
func (m messages) managedBy(ref Ref, owners []Owner) string {
	revert := ""
	if len(owners) > 0 {
		revert = owners[0].Revert
	}
	return fmt.Sprintf("%s: %s is managed by %s; %s.", m.rule, ref, names(owners), revert)
}

// changed refuses an update of a managed object, naming the changed paths.
func (m messages) changed(ref Ref, owners []Owner, c object.Changes) string {
	return fmt.Sprintf("%s Changed: %s. %s", m.managedBy(ref, owners), ChangeList(c), m.instead("Change it in the Git repository instead", owners))
}

// changedAs refuses an update of a managed object for a change named in
// words rather than paths.
func (m messages) changedAs(ref Ref, owners []Owner, what string) string {
	return fmt.Sprintf("%s Changed: %s. %s", m.managedBy(ref, owners), what, m.instead("Change it in the Git repository instead", owners))
}

// ChangeList names the first changed paths and how many more there are.
func ChangeList(c object.Changes) string {
	list := strings.Join(c.First, ", ")
	if more := c.Total - len(c.First); more > 0 {
		list = strings.TrimPrefix(fmt.Sprintf("%s and %d more", list, more), " ")
	}
	return list
}

// deleting refuses the deletion of a managed object.
func (m messages) deleting(ref Ref, owners []Owner) string {
	return fmt.Sprintf("%s Deleting it is refused: %s would re-create it. %s", m.managedBy(ref, owners), m.tool, m.instead("Remove it from the Git repository instead", owners))
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
