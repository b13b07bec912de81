package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteCRDs deletes crds and waits until the API server has removed them.
//
// The API server's CRD finalizer deletes a CRD's objects before the CRD.
// When it finds the CRD's storage still initializing (as it is right after
// the CRD's schema changed), it records InstanceDeletionFailed and retries;
// but when its retry then conflicts with its own status write, nothing
// queues the CRD again until the informers' resync minutes later (Flux's
// newer CRDs, removed right after an upgrade, hit this). So a CRD found in
// that state is touched (an annotation), which queues it at once.
//
// Each touch is logged to t. When one is still there after timeout, the
// error says where its deletion
// stands: its finalizers, its Terminating condition and the server's
// audited writes to it.
func (e *Env) DeleteCRDs(ctx context.Context, t testing.TB, timeout time.Duration, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	var errs []error
	for _, crd := range crds {
		if err := e.Client.Delete(ctx, crd.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the CRD %s: %w", crd.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var left []*apiextensionsv1.CustomResourceDefinition
	touched := map[string]string{}
	err := Poll(ctx, timeout, func() error {
		left = left[:0]
		for _, crd := range crds {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(crd), cur)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if err := e.retryCRDDeletion(ctx, t, cur, touched); err != nil {
				return err
			}
			left = append(left, cur)
		}
		if len(left) > 0 {
			return fmt.Errorf("%d of %d CRDs are still there", len(left), len(crds))
		}
		return nil
	})
	if err == nil {
		return nil
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%v", err)
	for _, crd := range left {
		report.WriteString("\n" + e.crdDeletionState(crd))
	}
	return errors.New(report.String())
}

// retryDeletionAnnotation is the annotation DeleteCRDs writes on a CRD
// whose deletion the API server's finalizer failed, to queue it again.
const retryDeletionAnnotation = FieldManager + "/retry-deletion"

// retryCRDDeletion touches crd when the API server's CRD finalizer failed
// to list or delete its objects and has not written it since the last touch
// (touched holds the resourceVersion each touch left).
func (e *Env) retryCRDDeletion(ctx context.Context, t testing.TB, crd *apiextensionsv1.CustomResourceDefinition, touched map[string]string) error {
	if crd.DeletionTimestamp == nil || touched[crd.Name] == crd.ResourceVersion {
		return nil
	}
	for _, c := range crd.Status.Conditions {
		if c.Type != apiextensionsv1.Terminating || c.Reason != "InstanceDeletionFailed" {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, retryDeletionAnnotation, crd.ResourceVersion)
		if err := e.Client.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return client.IgnoreNotFound(err)
		}
		t.Logf("CRD %s: the API server's finalizer failed (%s), touched it to retry", crd.Name, c.Message)
		touched[crd.Name] = crd.ResourceVersion
	}
	return nil
}

// crdDeletionState describes how far the deletion of crd has got.
func (e *Env) crdDeletionState(crd *apiextensionsv1.CustomResourceDefinition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CRD %s: ", crd.Name)
	if crd.DeletionTimestamp == nil {
		b.WriteString("not being deleted")
	} else {
		fmt.Fprintf(&b, "deleting since %s, finalizers %v", crd.DeletionTimestamp.UTC().Format(time.RFC3339), crd.Finalizers)
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating {
			fmt.Fprintf(&b, ", Terminating=%s (%s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	events, err := e.AuditEvents(func(ev AuditEvent) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == "customresourcedefinitions" && ev.ObjectRef.Name == crd.Name
	})
	if err != nil {
		fmt.Fprintf(&b, "\n  %v", err)
		return b.String()
	}
	const last = 12
	if len(events) > last {
		events = events[len(events)-last:]
	}
	for _, ev := range events {
		code := int32(0)
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		fmt.Fprintf(&b, "\n  audited at %s: %s %s/%s by %s: %d", ev.StageTimestamp, ev.Verb, ev.ObjectRef.Name, ev.ObjectRef.Subresource, ev.User.Username, code)
	}
	return b.String()
}
