package fleetguard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fmt"
	"strings"

	"github.com/stewardhq/steward/webhooks/object"
)

// listedPaths is how many changed paths a denial names before "and N more".
const listedPaths = 5

// subject names the object the way denial messages do: "Kind ns/name", or
// "Kind name" for cluster-scoped objects; a name still to be generated is
// shown as its prefix followed by "*".
func subject(kind, namespace string, m objectMeta) string {
	name := m.Name
	if name == "" && m.GenerateName != "" {
		name = m.GenerateName + "*"
	}
	if namespace != "" {
		name = namespace + "/" + name
	}
	return kind + " " + name
}

// messages builds denials; breakGlass is the configured group, if any.
type messages struct {
	breakGlass string
}

func (m messages) emergency() string {
	if m.breakGlass == "" {
		return "."
	}
	return "; in an emergency repeat the request as a member of " + m.breakGlass + "."
}

func (m messages) managedBy(subj string, meta objectMeta) string {
	return fmt.Sprintf("fleetguard: %s is managed by Fleet (%s); manual changes diverge from Git and Fleet reverts them.", subj, meta.owner())
}

// changed refuses an update of a managed object, naming the changed paths.
func (m messages) changed(subj string, meta objectMeta, c object.Changes) string {
	list := strings.Join(c.First, ", ")
	if more := c.Total - len(c.First); more > 0 {
		list = fmt.Sprintf("%s and %d more", list, more)
	}
	return fmt.Sprintf("%s Changed: %s. Change it in the Git repository instead%s", m.managedBy(subj, meta), list, m.emergency())
}

// deleting refuses the deletion of a managed object.
func (m messages) deleting(subj string, meta objectMeta) string {
	return fmt.Sprintf("%s Deleting it is refused: Fleet would re-create it. Remove it from the Git repository instead%s", m.managedBy(subj, meta), m.emergency())
}

// stripping refuses an update that removes Fleet's ownership keys.
func (m messages) stripping(subj string, meta objectMeta, keys []string) string {
	return fmt.Sprintf("%s Removing Fleet's ownership %s is refused: it would hide the object from Fleet while it still runs as deployed from Git. Change it in the Git repository instead%s",
		m.managedBy(subj, meta), strings.Join(keys, " and "), m.emergency())
}

// spoofing refuses a create, or an update of an unmanaged object, that
// sets Fleet's ownership keys: only the Fleet agent may claim an object for
// a bundle.
func (m messages) spoofing(subj, verb string, meta objectMeta) string {
	return fmt.Sprintf("fleetguard: %s %s Fleet's ownership %s (%s), which only the Fleet agent sets; a hand-made object with them passes for Git-managed, and Fleet may prune or overwrite it. Remove Fleet's keys, or add the object to the Git repository instead%s",
		subj, verb, strings.Join(meta.ownershipKeys(), " and "), meta.owner(), m.emergency())
}

// addingOwners refuses an update that gives a managed object new owners.
func (m messages) addingOwners(subj string, meta objectMeta, added []metav1.OwnerReference) string {
	names := make([]string, len(added))
	for i, o := range added {
		names[i] = o.Kind + " " + o.Name
	}
	return fmt.Sprintf("%s Adding the owner reference %s is refused: the garbage collector would delete the object when that owner is deleted, outside Git. Change it in the Git repository instead%s",
		m.managedBy(subj, meta), strings.Join(names, ", "), m.emergency())
}
