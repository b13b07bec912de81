package webhookserver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stewardhq/steward/webhooks/serving"
)

// Reasons of the Events Steward records on its own Pod about its
// configuration file.
const (
	// EventConfigRejected: a changed file was refused; the last good
	// configuration stays in effect.
	eventConfigRejected = "StewardConfigRejected"
	// EventConfigReloaded: a changed file took effect.
	eventConfigReloaded = "StewardConfigReloaded"
)

// configEvents records what became of a reloaded configuration file as
// Events on Steward's own Pod, so `kubectl describe pod` and event-based
// alerting show a refused file next to the replica that refused it.
type configEvents struct {
	recorder serving.EventRecorder
	pod      *corev1.ObjectReference
}

// newConfigEvents records through recorder on the Pod namespace/name
// (with uid, which `kubectl describe` matches Events by), as the
// Deployment passes them from the downward API ($POD_NAME, $POD_UID). It
// returns nil, recording nothing, without a recorder or a Pod name:
// Steward runs outside a Pod, or records no Events.
func newConfigEvents(recorder serving.EventRecorder, namespace, name, uid string) *configEvents {
	if recorder == nil || name == "" {
		return nil
	}
	return &configEvents{recorder: recorder, pod: &corev1.ObjectReference{
		APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name, UID: types.UID(uid),
	}}
}

func (e *configEvents) rejected(path string, err error) {
	if e == nil {
		return
	}
	e.record(corev1.EventTypeWarning, eventConfigRejected,
		"Refused the configuration file "+path+"; the last good configuration stays in effect: "+err.Error())
}

// reloaded records the fields a new file changed, and those of them that
// need the manifests rendered again or a restart. A file whose settings
// are all as before (a comment changed) records nothing.
func (e *configEvents) reloaded(path string, changed, registration, restart []string) {
	if e == nil || len(changed)+len(restart) == 0 {
		return
	}
	note := "Loaded the configuration file " + path
	if len(changed) > 0 {
		note += "; in effect now: " + strings.Join(changed, ", ")
	}
	if len(registration) > 0 {
		note += "; render and apply the manifests for it to register: " + strings.Join(registration, ", ")
	}
	if len(restart) > 0 {
		note += "; takes a restart: " + strings.Join(restart, ", ")
	}
	e.record(corev1.EventTypeNormal, eventConfigReloaded, note)
}

func (e *configEvents) record(eventType, reason, note string) {
	e.recorder.Eventf(e.pod, nil, eventType, reason, "Reload", "%s", serving.TruncateNote(note))
}
