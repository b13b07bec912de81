package apimigration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// crdReader answers GETs of CRDs by name from stored versions, the way
// the API server's reader would; every other read is an error, so a test
// fails if the audit lists or reads anything else.
type crdReader struct {
	stored map[string][]string
	err    error
	gets   []string
}

func (c *crdReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != crdGVK || key.Namespace != "" {
		return errors.New("the audit may only read CustomResourceDefinitions by name")
	}
	c.gets = append(c.gets, key.Name)
	if c.err != nil {
		return c.err
	}
	stored, ok := c.stored[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: crdGVK.Group, Resource: "customresourcedefinitions"}, key.Name)
	}
	u.SetName(key.Name)
	u.SetUID(types.UID("uid-" + key.Name))
	vs := make([]any, len(stored))
	for i, v := range stored {
		vs[i] = v
	}
	return unstructured.SetNestedSlice(u.Object, vs, "status", "storedVersions")
}

func (c *crdReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the audit must not list")
}

// auditRule is a rule targeting fluxVersion whose cluster cache last saw s.
func auditRule(t *testing.T, fluxVersion string, s *clustercache.Served) *Rule {
	r := newRule(t, fluxVersion)
	r.view.discovered = func() *clustercache.Served { return s }
	return r
}

func crdRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: name, UID: types.UID("uid-" + name)}
}

func TestAuditStoredVersions(t *testing.T) {
	const helm, kustomize, alerts = "helmreleases.helm.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io", "alerts.notification.toolkit.fluxcd.io"
	served := func() *clustercache.Served {
		s := withServed(emptyServed(), HelmGroup, "helmreleases", "v2", "v2beta2")
		s = withServed(s, KustomizeGroup, "kustomizations", "v1", "v1beta2")
		return withServed(s, NotificationGroup, "alerts", "v1beta3", "v1beta2")
	}
	cases := map[string]struct {
		reason  string
		target  string
		served  *clustercache.Served
		stored  map[string][]string
		want    []rule.Finding
		wantErr string
	}{
		"StoredVersionsTheTargetNoLongerServesFail": {
			reason: "A CRD whose storedVersions lists a version the target drops fails, naming the versions, the release that drops each and flux migrate.",
			target: "2.8",
			served: served(),
			stored: map[string][]string{helm: {"v2beta1", "v2beta2", "v2"}, kustomize: {"v1"}, alerts: {"v1beta2", "v1beta3"}},
			want: []rule.Finding{
				{Check: CheckStoredVersions, Result: rule.AuditPass, Object: crdRef(kustomize), Properties: map[string]string{"storedVersions": "v1", "target": "2.8"}},
				{Check: CheckStoredVersions, Result: rule.AuditFail, Object: crdRef(helm), Properties: map[string]string{
					"storedVersions": "v2beta1,v2beta2,v2", "removedIn": "v2beta1: 2.7, v2beta2: 2.8", "target": "2.8"}},
				{Check: CheckStoredVersions, Result: rule.AuditPass, Object: crdRef(alerts), Properties: map[string]string{"storedVersions": "v1beta2,v1beta3", "target": "2.8"}},
			},
		},
		"EveryStoredVersionServedPasses": {
			reason: "With target 2.6 nothing in the table is removed yet, so every Flux CRD passes.",
			target: "2.6",
			served: served(),
			stored: map[string][]string{helm: {"v2beta1", "v2"}, kustomize: {"v1beta2", "v1"}, alerts: {"v1beta2", "v1beta3"}},
			want: []rule.Finding{
				{Check: CheckStoredVersions, Result: rule.AuditPass, Object: crdRef(kustomize), Properties: map[string]string{"storedVersions": "v1beta2,v1", "target": "2.6"}},
				{Check: CheckStoredVersions, Result: rule.AuditPass, Object: crdRef(helm), Properties: map[string]string{"storedVersions": "v2beta1,v2", "target": "2.6"}},
				{Check: CheckStoredVersions, Result: rule.AuditPass, Object: crdRef(alerts), Properties: map[string]string{"storedVersions": "v1beta2,v1beta3", "target": "2.6"}},
			},
		},
		"OnlyServedFluxKindsAreRead": {
			reason: "Kinds the cluster does not serve are not read, and a CRD deleted since discovery is skipped.",
			target: "2.9",
			served: withServed(emptyServed(), NotificationGroup, "alerts", "v1beta3", "v1beta2"),
			stored: map[string][]string{helm: {"v2beta1"}},
		},
		"ServedKindsAtTheNewestTarget": {
			reason: "At 2.9 the notification v1beta2 is gone too.",
			target: "2.9",
			served: withServed(emptyServed(), NotificationGroup, "alerts", "v1beta3", "v1beta2"),
			stored: map[string][]string{alerts: {"v1beta2", "v1beta3"}},
			want: []rule.Finding{
				{Check: CheckStoredVersions, Result: rule.AuditFail, Object: crdRef(alerts), Properties: map[string]string{
					"storedVersions": "v1beta2,v1beta3", "removedIn": "v1beta2: 2.9", "target": "2.9"}},
			},
		},
		"NoDiscoveryYetIsAnError": {
			reason:  "Before the cluster cache's first answer the rule cannot say which Flux CRDs exist.",
			target:  "2.8",
			wantErr: "has not discovered",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := auditRule(t, tc.target, tc.served)
			reader := &crdReader{stored: tc.stored}
			got, err := r.Audit(context.Background(), reader)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nAudit(...) error = %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nAudit(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(rule.Finding{}, "Message")); diff != "" {
				t.Errorf("%s\nAudit(...) (-want +got):\n%s", tc.reason, diff)
			}
			if len(reader.gets) != len(tc.served.Resources) {
				t.Errorf("%s\nthe audit read %v, want one GET per served Flux kind (%d)", tc.reason, reader.gets, len(tc.served.Resources))
			}
		})
	}
}

func TestAuditStoredVersionsMessage(t *testing.T) {
	r := auditRule(t, "2.8", withServed(emptyServed(), HelmGroup, "helmreleases", "v2", "v2beta2"))
	got, err := r.Audit(context.Background(), &crdReader{stored: map[string][]string{"helmreleases.helm.toolkit.fluxcd.io": {"v2beta2", "v2"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("Audit(...) = %v, %v; want one finding", got, err)
	}
	want := "apimigration: CustomResourceDefinition helmreleases.helm.toolkit.fluxcd.io still lists helm.toolkit.fluxcd.io/v2beta2 in status.storedVersions, " +
		"which Flux 2.8 no longer serves (this cluster targets Flux 2.8 (config)); the upgrade to Flux 2.8 fails on this CRD until the objects stored in it are rewritten. " +
		"Run `flux migrate` (Flux CLI 2.7 or later) before upgrading to Flux 2.8"
	if got[0].Message != want {
		t.Errorf("message:\n got %s\nwant %s", got[0].Message, want)
	}
}

func TestAuditReadErrorFailsThePass(t *testing.T) {
	r := auditRule(t, "2.8", withServed(emptyServed(), HelmGroup, "helmreleases", "v2"))
	reader := &crdReader{err: apierrors.NewForbidden(schema.GroupResource{Group: crdGVK.Group, Resource: "customresourcedefinitions"}, "x", errors.New("no"))}
	if got, err := r.Audit(context.Background(), reader); err == nil {
		t.Errorf("Audit(...) = %v, nil; a CRD that cannot be read must fail the pass, so the previous findings stand", got)
	}
}

func TestAuditRBACNamesEveryFluxCRD(t *testing.T) {
	rules := newRule(t, "").Spec().RBAC
	if len(rules) != 1 || len(rules[0].ResourceNames) != len(apis) || !cmp.Equal(rules[0].Verbs, []string{"get"}) {
		t.Fatalf("RBAC = %+v, want get on each of the %d Flux CRDs by name", rules, len(apis))
	}
	for _, a := range apis {
		if !strings.Contains(strings.Join(rules[0].ResourceNames, " "), a.Resource+"."+a.Group) {
			t.Errorf("RBAC does not name the CRD of %s", a.Kind)
		}
	}
}

func TestAuditFollowsTheDiscoveredRelease(t *testing.T) {
	// Unpinned, with Flux 2.9's label on the CRDs the cache saw, the pass
	// judges against 2.9 even before the follower has chosen it.
	s := labelled(withServed(emptyServed(), NotificationGroup, "alerts", "v1beta3"), NotificationGroup, "alerts", "v2.9.0")
	r := auditRule(t, "", s)
	got, err := r.Audit(context.Background(), &crdReader{stored: map[string][]string{"alerts.notification.toolkit.fluxcd.io": {"v1beta2", "v1beta3"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("Audit(...) = %v, %v; want one finding", got, err)
	}
	if got[0].Result != rule.AuditFail || got[0].Properties["target"] != "2.9" {
		t.Errorf("Audit(...) = %+v; want a failure against the discovered 2.9", got[0])
	}
}
