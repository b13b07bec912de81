package suspendnotice

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckSuspended is the audit's one check: a Flux object that is
// suspended, as its suspension record says.
const CheckSuspended = "suspended"

// suspendedObject is one cached Flux object carrying the suspension
// record.
type suspendedObject struct {
	kind       fluxKind
	apiVersion string
	meta       metav1.ObjectMeta
}

// suspendedLister lists the objects carrying the suspension record; the
// cache set up by SetupWithManager is one.
type suspendedLister interface {
	suspendedObjects() ([]suspendedObject, error)
}

var _ rule.Auditor = (*Rule)(nil)

// Audit reports every cached Flux object that carries the suspension
// record Steward writes (steward.dev/suspended-at) as a warning: it will
// not reconcile until resumed. An object suspended before Steward was
// installed, or through a path Steward does not see, has no record and
// is not reported. It errs while a kind's cache cannot answer.
func (r *Rule) Audit(context.Context, client.Reader) ([]rule.Finding, error) {
	lister, ok := r.suspensions.(suspendedLister)
	if !ok {
		return nil, errors.New("suspendnotice: the suspension cache is not set up")
	}
	objs, err := lister.suspendedObjects()
	if err != nil {
		return nil, err
	}
	findings := make([]rule.Finding, 0, len(objs))
	for _, o := range objs {
		findings = append(findings, rule.Finding{
			Check:  CheckSuspended,
			Result: rule.AuditWarn,
			Object: corev1.ObjectReference{
				APIVersion: o.apiVersion,
				Kind:       o.kind.Kind,
				Namespace:  o.meta.Namespace,
				Name:       o.meta.Name,
				UID:        o.meta.UID,
			},
			Message: suspendedMessage(o.kind, o.meta.Namespace, o.meta.Name),
			Properties: map[string]string{
				"suspendedBy": o.meta.Annotations[AnnotationSuspendedBy],
				"suspendedAt": o.meta.Annotations[AnnotationSuspendedAt],
			},
		})
	}
	return findings, nil
}

// suspendedObjects lists every Flux kind's cached objects that carry the
// record; the errors of the kinds whose caches cannot answer are joined.
func (s suspensions) suspendedObjects() ([]suspendedObject, error) {
	var out []suspendedObject
	var errs []error
	for _, k := range fluxKinds {
		gr := k.groupResource()
		objs, err := s.set.List(gr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		apiVersion := fmt.Sprintf("%s/%s", k.Group, s.set.Watching(gr))
		for _, obj := range objs {
			c, ok := obj.(*cachedFlux)
			if !ok || !c.suspended() {
				continue
			}
			out = append(out, suspendedObject{kind: k, apiVersion: apiVersion, meta: c.objectMeta()})
		}
	}
	return out, errors.Join(errs...)
}
