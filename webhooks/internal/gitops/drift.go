package gitops

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// Drift is read from managedFields: the API server records, per field
// manager, the fields it owns and when it last wrote. A manager other than
// the tool's own or Kubernetes' controllers that wrote after the tool's
// last write changed the object outside Git. Every guard's audit reads it
// the same way (DriftOf); only where the managedFields come from differs
// (fleetguard keeps a summary in its workload cache, fluxguard and
// argocdguard list the objects at audit time).

// kubernetesFieldManagers are the field managers of Kubernetes' own
// writers among kubernetesControllers: client-go names a manager after the
// binary, so every controller of the controller manager writes as
// kube-controller-manager (the deployment controller's revision
// annotation, the HorizontalPodAutoscaler's scale), and kubelets as
// kubelet. Their writes are never drift.
var kubernetesFieldManagers = []string{"kube-controller-manager", "kube-apiserver", "kubelet"}

// Bounds of a Drift, so a drifted object costs a cache a few hundred bytes
// at most, whatever its managedFields hold.
const (
	// MaxDriftFields is how many changed fields a Drift lists; findings
	// show ListedPaths of them.
	MaxDriftFields = 8
	// MaxDriftManagers is how many managers a Drift names.
	MaxDriftManagers = 4
	// maxFieldDepth bounds the walk of a fieldsV1 tree; a deeper field is
	// reported at this depth.
	maxFieldDepth = 32
	// MaxManagerName cuts a manager's name (the API server allows 128).
	MaxManagerName = 64
)

// Drift summarizes the writes made to an object since its tool last
// applied it. Its JSON form is short, for a cache that keeps it.
type Drift struct {
	// Managers are the managers that wrote after the tool, first by name.
	Managers []string `json:"m"`
	// At is the latest of their writes.
	At metav1.Time `json:"t"`
	// Fields are the first changed fields, sorted, as JSON pointers, with
	// "[key=value]" for a list item known by its keys.
	Fields []string `json:"f"`
	// Unlisted counts the changed fields Fields leaves out.
	Unlisted int `json:"n,omitempty"`
}

// DriftOf summarizes the writes in managedFields made after the last one
// of the agent's field managers by anyone but the agent and Kubernetes'
// controllers, leaving out server-managed fields (status, bookkeeping) and
// those under skip. It returns false when there are none: the common case,
// which costs no decoding.
func DriftOf(entries []metav1.ManagedFieldsEntry, agent []string, skip []object.Pointer) (Drift, bool) {
	var agentLast time.Time
	for i := range entries {
		if e := &entries[i]; slices.Contains(agent, e.Manager) && e.Time != nil && e.Time.After(agentLast) {
			agentLast = e.Time.Time
		}
	}
	var d Drift
	var fields []string
	total := 0
	for i := range entries {
		e := &entries[i]
		if slices.Contains(agent, e.Manager) || slices.Contains(kubernetesFieldManagers, e.Manager) || e.Time == nil || !e.Time.After(agentLast) || e.FieldsV1 == nil {
			continue
		}
		w := fieldWalk{limit: MaxDriftFields, skip: skip}
		w.raw(e.FieldsV1.GetRawBytes())
		if w.total == 0 {
			continue // only server-managed or skipped fields
		}
		total += w.total
		fields = append(fields, w.first...)
		name := managerName(e.Manager)
		if !slices.Contains(d.Managers, name) {
			d.Managers = append(d.Managers, name)
		}
		if e.Time.After(d.At.Time) {
			d.At = metav1.NewTime(e.Time.UTC())
		}
	}
	if total == 0 {
		return Drift{}, false
	}
	sort.Strings(d.Managers)
	if len(d.Managers) > MaxDriftManagers {
		d.Managers = d.Managers[:MaxDriftManagers]
	}
	sort.Strings(fields)
	fields = slices.Compact(fields)
	if len(fields) > MaxDriftFields {
		fields = fields[:MaxDriftFields]
	}
	d.Fields = fields
	d.Unlisted = max(total-len(fields), 0)
	return d, true
}

// managerName is a manager's name as a Drift keeps it: valid UTF-8, as
// its JSON reads back, and cut to MaxManagerName bytes at a rune boundary.
func managerName(m string) string {
	m = strings.ToValidUTF8(m, "\uFFFD")
	if len(m) <= MaxManagerName {
		return m
	}
	cut := MaxManagerName
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

// fieldWalk lists the leaf fields of a fieldsV1 tree that are neither
// server-managed nor under skip: the first limit of them, and how many in
// total (a fieldsVisitor).
type fieldWalk struct {
	limit int
	skip  []object.Pointer
	first []string
	total int
	path  object.Pointer
}

// raw walks a fieldsV1 document. One that is no object is no field: the
// API server only stores valid ones.
func (w *fieldWalk) raw(b []byte) {
	if w.skipped() {
		return
	}
	walkFields(b, 0, maxFieldDepth, object.Members, w)
}

func (w *fieldWalk) skipped() bool {
	return Skipped(w.path, serverManaged) || Skipped(w.path, w.skip)
}

func (w *fieldWalk) enter(key []byte) bool {
	w.path = append(w.path, fieldToken(string(key)))
	if w.skipped() {
		w.leave()
		return false
	}
	return true
}

func (w *fieldWalk) leave() { w.path = w.path[:len(w.path)-1] }

// owned reports the fields owned as a whole: an item's own "." beside
// fields below it is no field of its own. A field is kept as valid UTF-8,
// as a Drift's JSON reads back (fieldsV1 keys are raw bytes).
func (w *fieldWalk) owned(whole bool) {
	if !whole {
		return
	}
	w.total++
	if len(w.first) < w.limit {
		w.first = append(w.first, strings.ToValidUTF8(w.path.String(), "\uFFFD"))
	}
}

// fieldToken turns a fieldsV1 key into a path token: "f:name" is the field
// name, "i:3" the index, "k:{...}" a list item by its keys, shown as
// "[name=web]", and "v:..." a set member, shown as "[value]".
func fieldToken(k string) string {
	if len(k) < 2 || k[1] != ':' {
		return k
	}
	switch k[0] {
	case 'f', 'i':
		return k[2:]
	case 'k':
		var keys map[string]any
		if json.Unmarshal([]byte(k[2:]), &keys) == nil && len(keys) > 0 {
			names := make([]string, 0, len(keys))
			for n := range keys {
				names = append(names, n)
			}
			sort.Strings(names)
			parts := make([]string, len(names))
			for i, n := range names {
				v, err := json.Marshal(keys[n])
				if s, ok := keys[n].(string); ok {
					v, err = []byte(s), nil
				}
				if err != nil {
					v = []byte("?")
				}
				parts[i] = n + "=" + string(v)
			}
			return "[" + strings.Join(parts, ",") + "]"
		}
		return "[" + k[2:] + "]"
	case 'v':
		return "[" + k[2:] + "]"
	}
	return k
}
