package gitopstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/rule"
)

// ReaderWith is NewReader over objects, changed by with when it is set:
// the guards' audit tables set what a case's reader refuses or answers.
func ReaderWith(with func(*Reader), objects ...*metav1.PartialObjectMetadata) *Reader {
	r := NewReader(objects...)
	if with != nil {
		with(r)
	}
	return r
}

// CheckAudit fails t, naming reason, when an audit over r returned an
// error, or findings other than want (their messages aside), or, where
// wantLists is not nil, made list requests other than wantLists (each as
// "<kind> <label selector>").
func CheckAudit(t testing.TB, reason string, r *Reader, got []rule.Finding, err error, want []rule.Finding, wantLists []string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s\nAudit(...): %v", reason, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(rule.Finding{}, "Message")); diff != "" {
		t.Errorf("%s\nAudit(...) (-want +got):\n%s", reason, diff)
	}
	if wantLists == nil {
		return
	}
	var lists []string
	for _, req := range r.Requests() {
		lists = append(lists, req[:strings.Index(req, " limit=")])
	}
	if diff := cmp.Diff(wantLists, lists, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s\nlist requests (-want +got):\n%s", reason, diff)
	}
}

// CheckMessages fails t unless an audit returned no error and one finding
// for each of want, whose messages are want's, in order.
func CheckMessages(t testing.TB, got []rule.Finding, err error, want ...string) {
	t.Helper()
	if err != nil || len(got) != len(want) {
		t.Fatalf("Audit(...) = %v, %v; want %d findings", got, err, len(want))
	}
	for i, f := range got {
		if f.Message != want[i] {
			t.Errorf("message %d:\n got %s\nwant %s", i, f.Message, want[i])
		}
	}
}

// Unsynced is an owners' cache whose informers have not synced: it
// answers every read with an error.
type Unsynced struct{}

// Lookup fails.
func (Unsynced) Lookup(schema.GroupResource, string, string) (any, bool, error) {
	return nil, false, errors.New("not synced")
}

// List fails.
func (Unsynced) List(schema.GroupResource) ([]any, error) { return nil, errors.New("not synced") }
