package rulessync

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Repair is one change of Steward's registration that Steward undid.
type Repair struct {
	Kind, Configuration string
	// UID and ResourceVersion are the configuration's after the repair:
	// the Event regards that version, so each repair is an Event of its
	// own rather than a repeat in the series of the first (the events
	// broadcaster counts Events regarding the same object, for the same
	// reason and action, as one series, keeping the first one's note).
	UID, ResourceVersion string
	// Deleted: the whole configuration was deleted and is re-created.
	Deleted bool
	// Entries are the entries put back; Fields, by entry, the fields of
	// each that had changed ("(entry)": the entry was missing).
	Entries []string
	Fields  map[string][]string
	// ChangedBy are the field managers that wrote the configuration since
	// Steward last saw it, from its managedFields.
	ChangedBy []Change
}

// Change is one field manager's write, as managedFields record it.
type Change struct {
	Manager, Operation, Time string
	// Fields are the fields it owns in the entries put back.
	Fields []string
}

// Reports counts, logs and records an Event for every repair.
type Reports struct {
	repairs *prometheus.CounterVec
	events  EventRecorder
	log     logr.Logger
}

// EventRecorder records Kubernetes Events (client-go's events.k8s.io
// recorder).
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// NewReports returns the reporting of repairs; events may be nil (the
// configuration records no Events).
func NewReports(events EventRecorder, log logr.Logger) *Reports {
	return &Reports{
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_registration_repairs_total",
			Help: "Changes of Steward's webhook configurations that Steward undid, by configuration and webhook entry: an entry removed or changed, or the configuration deleted (every entry counts once).",
		}, []string{"kind", "configuration", "entry"}),
		events: events,
		log:    log,
	}
}

// Describe implements prometheus.Collector.
func (r *Reports) Describe(ch chan<- *prometheus.Desc) { r.repairs.Describe(ch) }

// Collect implements prometheus.Collector.
func (r *Reports) Collect(ch chan<- prometheus.Metric) { r.repairs.Collect(ch) }

// known makes the series of every entry of a configuration exist at 0,
// so an alert on their increase also sees the first repair.
func (r *Reports) known(kind, configuration string, entries []string) {
	if r == nil {
		return
	}
	for _, e := range entries {
		r.repairs.WithLabelValues(kind, configuration, e)
	}
}

// RepairReason is the reason of the Event recorded on a configuration
// Steward repaired.
const RepairReason = "RegistrationRepaired"

func (r *Reports) repaired(p Repair) {
	if r == nil {
		return
	}
	for _, e := range p.Entries {
		r.repairs.WithLabelValues(p.Kind, p.Configuration, e).Inc()
	}
	note := p.note()
	r.log.Info("Steward put its webhook configuration back: "+note, "configuration", p.Kind+"/"+p.Configuration,
		"entries", p.Entries, "deleted", p.Deleted, "changedBy", p.managers())
	if r.events == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "admissionregistration.k8s.io/v1", Kind: p.Kind, Name: p.Configuration,
		UID: types.UID(p.UID), ResourceVersion: p.ResourceVersion}
	// An Event's note holds at most 1 kB.
	if len(note) > 1000 {
		note = note[:997] + "..."
	}
	r.events.Eventf(ref, nil, corev1.EventTypeWarning, RepairReason, "Repair", "%s", note)
}

// note says what was put back and who had changed it.
func (p Repair) note() string {
	var b strings.Builder
	if p.Deleted {
		fmt.Fprintf(&b, "%s %s was deleted; Steward re-created it with its entries %s (who deleted it is only in the API server's audit log)", p.Kind, p.Configuration, strings.Join(p.Entries, ", "))
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s was changed; Steward put back", p.Kind, p.Configuration)
	for i, e := range p.Entries {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (%s)", e, strings.Join(p.Fields[e], ", "))
	}
	b.WriteString(". Changed by: ")
	if len(p.ChangedBy) == 0 {
		b.WriteString("no field manager recorded it (a removal leaves none; the API server's audit log names who)")
	}
	for i, c := range p.ChangedBy {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s at %s)", c.Manager, c.Operation, c.Time)
		if len(c.Fields) > 0 {
			fmt.Fprintf(&b, " owning %s", strings.Join(c.Fields, ", "))
		}
	}
	return b.String()
}

func (p Repair) managers() []string {
	var out []string
	for _, c := range p.ChangedBy {
		if c.Manager != "" {
			out = append(out, c.Manager)
		}
	}
	return out
}

// ownManager says whether a field manager is Steward's own: its
// registration's, a rule's (rule.FieldManager) or the restore's.
func ownManager(m string) bool { return m == FieldManager || strings.HasPrefix(m, FieldManager+"-") }

// changedBy names the field managers other than Steward's whose
// managedFields entry in live is new or newer than in seen (the object
// at Steward's last sync; nil: every other manager), with the fields each
// owns in the entries put back.
func changedBy(seen, live map[string]any, entries []string) []Change {
	// A manager's entry changed when its time or its fields did: the time
	// has a resolution of a second.
	before := map[string]string{}
	for _, m := range managedFields(seen) {
		before[m.key()] = m.version()
	}
	var out []Change
	for _, m := range managedFields(live) {
		if ownManager(m.Manager) {
			continue
		}
		if v, ok := before[m.key()]; ok && v == m.version() {
			continue
		}
		out = append(out, Change{Manager: m.Manager, Operation: m.Operation, Time: m.Time, Fields: m.entryFields(entries)})
	}
	return out
}

// managedField is one managedFields entry, as read from unstructured.
type managedField struct {
	Manager   string         `json:"manager"`
	Operation string         `json:"operation"`
	Time      string         `json:"time"`
	FieldsV1  map[string]any `json:"fieldsV1"`
}

func (m managedField) key() string { return m.Manager + "/" + m.Operation }

// version is what changes when the manager writes again.
func (m managedField) version() string {
	fields, _ := json.Marshal(m.FieldsV1)
	return m.Time + " " + string(fields)
}

func managedFields(obj map[string]any) []managedField {
	if obj == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(obj, "metadata", "managedFields")
	data, err := json.Marshal(list)
	if err != nil {
		return nil
	}
	var out []managedField
	_ = json.Unmarshal(data, &out)
	return out
}

// entryFields lists the fields m owns in the named entries, as
// "webhooks[name].field.sub".
func (m managedField) entryFields(entries []string) []string {
	webhooks, _ := m.FieldsV1["f:webhooks"].(map[string]any)
	var out []string
	for key, v := range webhooks {
		var id struct{ Name string }
		if !strings.HasPrefix(key, "k:") || json.Unmarshal([]byte(strings.TrimPrefix(key, "k:")), &id) != nil {
			continue
		}
		if !slices.Contains(entries, id.Name) {
			continue
		}
		for _, f := range leaves(v, "") {
			out = append(out, "webhooks["+id.Name+"]"+f)
		}
	}
	slices.Sort(out)
	return out
}

// leaves lists the paths of a FieldsV1 set's leaves (".failurePolicy",
// ".clientConfig.url"), stopping at list items.
func leaves(set any, prefix string) []string {
	m, ok := set.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for key, v := range m {
		if key == "." {
			continue
		}
		name, ok := strings.CutPrefix(key, "f:")
		if !ok {
			out = append(out, prefix) // an item of a list or set: the list is the field
			continue
		}
		if sub, _ := v.(map[string]any); len(sub) == 0 {
			out = append(out, prefix+"."+name)
		} else {
			out = append(out, leaves(v, prefix+"."+name)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
