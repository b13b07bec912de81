package fleetguard

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/object"
)

// Drift is read from managedFields: the API server records, per field
// manager, the fields it owns and when it last wrote. A manager other than
// the Fleet agent or Kubernetes' own controllers that wrote after the
// agent's last write changed the object outside Git. The workload cache
// drops managedFields (cachetrim.go), so the transform keeps, for drifted
// objects only, a small summary in driftAnnotation; the audit reads it.

// AgentFieldManager is the field manager the Fleet agent writes with. The
// agent sets none: Helm (which installs each bundle deployment) and
// client-go fall back to the base name of the running binary, and the
// agent's image runs /usr/bin/fleetagent.
const AgentFieldManager = "fleetagent"

// kubernetesFieldManagers are the field managers of Kubernetes' own
// writers among gitops.KubernetesControllers: client-go names a
// manager after the binary, so every controller of the controller manager
// writes as kube-controller-manager (the deployment controller's revision
// annotation, the HorizontalPodAutoscaler's scale), and kubelets as
// kubelet.
var kubernetesFieldManagers = []string{"kube-controller-manager", "kube-apiserver", "kubelet"}

// driftAnnotation holds a drifted workload's summary in the cache. It is
// never written to the cluster: the transform builds the cached object's
// annotations itself and keeps no other annotation of this name.
const driftAnnotation = "fleetguard.steward.dev/drift"

// Bounds of a summary, so a drifted object costs the cache a few hundred
// bytes at most, whatever its managedFields hold.
const (
	// maxDriftFields is how many changed fields a summary lists; the
	// audit shows listedPaths of those left after the ignored fields.
	maxDriftFields = 8
	// maxDriftManagers is how many managers a summary names.
	maxDriftManagers = 4
	// maxFieldDepth bounds the walk of a fieldsV1 tree; a deeper field is
	// reported at this depth.
	maxFieldDepth = 32
	// maxManagerName cuts a manager's name (the API server allows 128).
	maxManagerName = 64
)

// driftSummary is what the cache keeps of a drifted workload.
type driftSummary struct {
	// Managers are the managers that wrote after the agent, first by name.
	Managers []string `json:"m"`
	// At is the latest of their writes.
	At metav1.Time `json:"t"`
	// Fields are the first changed fields, sorted, as JSON pointers, with
	// "[key=value]" for a list item known by its keys.
	Fields []string `json:"f"`
	// Unlisted counts the changed fields Fields leaves out.
	Unlisted int `json:"n,omitempty"`
}

// driftOf summarizes the writes in managedFields made after the Fleet
// agent's last one by anyone but the agent and Kubernetes' controllers,
// leaving out server-managed fields (status, bookkeeping). It returns
// false when there are none: the common case, which costs no decoding.
func driftOf(entries []metav1.ManagedFieldsEntry) (driftSummary, bool) {
	var agentLast time.Time
	for i := range entries {
		if e := &entries[i]; e.Manager == AgentFieldManager && e.Time != nil && e.Time.After(agentLast) {
			agentLast = e.Time.Time
		}
	}
	var s driftSummary
	var fields []string
	total := 0
	for i := range entries {
		e := &entries[i]
		if e.Manager == AgentFieldManager || slices.Contains(kubernetesFieldManagers, e.Manager) || e.Time == nil || !e.Time.After(agentLast) || e.FieldsV1 == nil {
			continue
		}
		w := fieldWalk{limit: maxDriftFields}
		w.raw(e.FieldsV1.GetRawBytes())
		if w.total == 0 {
			continue // only server-managed fields
		}
		total += w.total
		fields = append(fields, w.first...)
		name := managerName(e.Manager)
		if !slices.Contains(s.Managers, name) {
			s.Managers = append(s.Managers, name)
		}
		if e.Time.After(s.At.Time) {
			s.At = metav1.NewTime(e.Time.UTC())
		}
	}
	if total == 0 {
		return driftSummary{}, false
	}
	sort.Strings(s.Managers)
	if len(s.Managers) > maxDriftManagers {
		s.Managers = s.Managers[:maxDriftManagers]
	}
	sort.Strings(fields)
	fields = slices.Compact(fields)
	if len(fields) > maxDriftFields {
		fields = fields[:maxDriftFields]
	}
	s.Fields = fields
	s.Unlisted = max(total-len(fields), 0)
	return s, true
}

// managerName is a manager's name as a summary keeps it: valid UTF-8, as
// its JSON reads back, and cut to maxManagerName bytes at a rune boundary.
func managerName(m string) string {
	m = strings.ToValidUTF8(m, "\uFFFD")
	if len(m) <= maxManagerName {
		return m
	}
	cut := maxManagerName
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut]
}

// encode is the summary as the annotation keeps it.
func (s driftSummary) encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeDrift reads a summary back; anything else is no drift.
func decodeDrift(v string) (driftSummary, bool) {
	var s driftSummary
	if v == "" || json.Unmarshal([]byte(v), &s) != nil || len(s.Fields)+s.Unlisted == 0 || s.Unlisted < 0 {
		return driftSummary{}, false
	}
	return s, true
}

// fieldWalk lists the leaf fields of a fieldsV1 tree that are not
// server-managed: the first limit of them, and how many in total.
type fieldWalk struct {
	limit int
	first []string
	total int
	path  object.Pointer
}

// raw walks a fieldsV1 document. One that does not decode is no field:
// the API server only stores valid ones.
func (w *fieldWalk) raw(b []byte) {
	var tree map[string]any
	if json.Unmarshal(b, &tree) != nil {
		return
	}
	w.node(tree)
}

func (w *fieldWalk) node(tree map[string]any) {
	if w.serverManaged() {
		return
	}
	keys := make([]string, 0, len(tree))
	for k := range tree {
		if k != "." {
			keys = append(keys, k)
		}
	}
	_, self := tree["."]
	if len(keys) == 0 || len(w.path) >= maxFieldDepth {
		// A leaf, or an item owned as a whole ("."), or as deep as the
		// walk goes.
		if len(w.path) > 0 || self {
			w.report()
		}
		return
	}
	sort.Strings(keys)
	for _, k := range keys {
		child, _ := tree[k].(map[string]any)
		w.path = append(w.path, fieldToken(k))
		w.node(child)
		w.path = w.path[:len(w.path)-1]
	}
}

func (w *fieldWalk) report() {
	w.total++
	if len(w.first) < w.limit {
		w.first = append(w.first, w.path.String())
	}
}

// serverManaged reports whether the current path is one an update may
// change without being a manual edit (servermanaged.go).
func (w *fieldWalk) serverManaged() bool {
	for _, s := range gitops.ServerManaged {
		if w.path.HasPrefix(s) {
			return true
		}
	}
	return false
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
