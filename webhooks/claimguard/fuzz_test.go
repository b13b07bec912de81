package claimguard

import (
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	objectview "github.com/stewardhq/steward/webhooks/object"

	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

var seedObjects = []string{
	`{"apiVersion":"database.example.org/v1alpha1","kind":"PostgreSQLInstance","metadata":{"name":"db","namespace":"default"},"spec":{"compositeDeletePolicy":"Foreground"}}`,
	`{"metadata":{"name":"db-x7k2p","labels":{"crossplane.io/claim-name":"db","crossplane.io/claim-namespace":"default"},"deletionTimestamp":"2026-03-01T11:57:00Z","finalizers":["foregroundDeletion"]},` +
		`"spec":{"claimRef":{"namespace":"default","name":"db"},"resourceRefs":[{"apiVersion":"database.aws.example.org/v1beta1","kind":"RDSInstance","name":"db-x7k2p-abcde"}]}}`,
	`{"metadata":{"name":"db","namespace":"default"},"spec":{"crossplane":{"resourceRefs":[{"apiVersion":"database.aws.m.example.org/v1beta1","kind":"RDSInstance","name":"db-q8w2z"}]}}}`,
	`{"metadata":{"name":"db-n3w11-xyz","labels":{"crossplane.io/composite":"db-n3w11"},"annotations":{"crossplane.io/external-name":"db"},` +
		`"ownerReferences":[{"apiVersion":"database.example.org/v1alpha1","kind":"XPostgreSQLInstance","name":"db-n3w11","uid":"u","controller":true}]}}`,
	`{"metadata":{"name":"x"},"spec":{"claimRef":"not an object","resourceRefs":{"a":1},"crossplane":[1],"compositeDeletePolicy":7}}`,
	`{"metadata":{"ownerReferences":[{"apiVersion":"a/b/c","controller":true}]}}`,
	`{"metadata":7}`, `[]`, `null`, ``, `{`,
}

// FuzzDecodeObject: any request body decodes or errs, never panics, for
// every role.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range seedObjects {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, r := range []role{roleComposite, roleManaged} {
			o, err := decodeObject(objectview.New(raw), r)
			if err == nil && o == nil {
				t.Fatal("no object and no error")
			}
		}
	})
}

// FuzzPropagationPolicy: any DELETE options decode or err, never panic.
func FuzzPropagationPolicy(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"propagationPolicy":"Foreground"}`, `{"orphanDependents":true}`, `{"propagationPolicy":7}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = propagationPolicy(raw)
	})
}

// FuzzXRD: any XRD, as the API server could return it, trims and parses
// without panicking, and trimming never changes what parseXRD reads.
func FuzzXRD(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"apiextensions.crossplane.io/v1","kind":"CompositeResourceDefinition","metadata":{"name":"x"},"spec":{"group":"g","names":{"kind":"X","plural":"xs"},` +
			`"claimNames":{"kind":"C","plural":"cs"},"versions":[{"name":"v1","served":true,"referenceable":true,"schema":{}}],"defaultCompositeDeletePolicy":"Foreground"}}`,
		`{"spec":{"versions":[1,"a",{"name":7}]}}`, `{"spec":[]}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		u := &unstructured.Unstructured{Object: m}
		before, errBefore := parseXRD(u)
		trimmed, err := trimXRD(u)
		if err != nil {
			t.Fatal(err)
		}
		after, errAfter := parseXRD(trimmed.(*unstructured.Unstructured))
		if (errBefore == nil) != (errAfter == nil) || (before != nil && after != nil && *before != *after) {
			t.Fatalf("trimming changed what is read: %+v (%v) -> %+v (%v)", before, errBefore, after, errAfter)
		}
	})
}

// FuzzTransform: any composite resource from the API server becomes a
// cached object without panicking.
func FuzzTransform(f *testing.F) {
	for _, s := range seedObjects {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return
		}
		if _, err := transform(&unstructured.Unstructured{Object: m}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzHandle: any body, for each kind of request the rule serves, gets an
// answer, never a panic.
func FuzzHandle(f *testing.F) {
	for i, s := range seedObjects {
		f.Add([]byte(s), uint8(i))
	}
	r := standard().xrd(appXRD, appGVR, true, stateSynced, oldApp).defaults()
	r.cfg.RequireForegroundDelete = true
	requests := []func(obj any) *admissiontest.Request{
		func(o any) *admissiontest.Request { return admissiontest.Create(pgClaimGVR, "PostgreSQLInstance", o) },
		func(o any) *admissiontest.Request { return admissiontest.Create(pgXRGVR, "XPostgreSQLInstance", o) },
		func(o any) *admissiontest.Request { return admissiontest.Create(appGVR, "XApp", o) },
		func(o any) *admissiontest.Request { return admissiontest.Create(rdsGVR, "RDSInstance", o) },
		func(o any) *admissiontest.Request { return admissiontest.Delete(pgClaimGVR, "PostgreSQLInstance", o) },
		func(o any) *admissiontest.Request {
			return admissiontest.Delete(appGVR, "XApp", o).Options([]byte(`{"propagationPolicy":"Background"}`))
		},
	}
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		rq := requests[int(which)%len(requests)](raw).Build()
		_ = ruletest.Judge(context.Background(), r, rq)
	})
}
