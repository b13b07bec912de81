package gitops

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stewardhq/steward/webhooks/object"
)

// AddedOwners lists the owner references the new object has and the old
// lacks. The garbage collector deletes an object once all its owners are
// gone, so an owner reference to an object the writer controls is a
// deferred delete that no DELETE request would show: the garbage
// collector's own delete is, rightly, never refused. Removing owners is
// not listed: it only keeps an object from being collected.
func AddedOwners(old, cur *object.View) []metav1.OwnerReference {
	if bytes.Equal(old.Field("metadata", "ownerReferences"), cur.Field("metadata", "ownerReferences")) {
		return nil // the common case: no owners, or the same ones, unread
	}
	before := old.OwnerReferences()
	var added []metav1.OwnerReference
	for _, n := range cur.OwnerReferences() {
		if !containsOwner(before, n) {
			added = append(added, n)
		}
	}
	return added
}

// containsOwner matches owner references by uid, which names one object
// for its whole life, or by kind and name where a uid is missing.
func containsOwner(refs []metav1.OwnerReference, r metav1.OwnerReference) bool {
	for _, o := range refs {
		if (r.UID != "" && o.UID == r.UID) || (r.UID == "" && o.UID == "" && o.Kind == r.Kind && o.Name == r.Name) {
			return true
		}
	}
	return false
}
