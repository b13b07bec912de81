package fleetguard

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ownerRef is the part of an owner reference fleetguard reads.
type ownerRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid"`
}

func (o ownerRef) String() string { return fmt.Sprintf("%s %s", o.Kind, o.Name) }

// addedOwners lists the owner references the new object has and the old
// lacks. The garbage collector deletes an object once all its owners are
// gone, so an owner reference to an object the writer controls is a
// deferred delete that no DELETE request would show: the garbage
// collector's own delete is, rightly, never refused. Removing owners is
// not listed: it only keeps an object from being collected.
func (o *objects) addedOwners() []ownerRef {
	return addedOwners(ownersRaw(&o.old), ownersRaw(&o.new))
}

// addedOwners lists the owner references in the JSON text newRaw that
// oldRaw lacks.
func addedOwners(oldRaw, newRaw []byte) []ownerRef {
	if bytes.Equal(oldRaw, newRaw) {
		return nil // the common case: no owners, or the same ones, unread
	}
	old, cur := decodeOwners(oldRaw), decodeOwners(newRaw)
	var added []ownerRef
	for _, n := range cur {
		if !containsOwner(old, n) {
			added = append(added, n)
		}
	}
	return added
}

// ownersRaw returns metadata.ownerReferences as JSON text, nil when the
// object has none.
func ownersRaw(d *rawDoc) []byte {
	var scratch [32]member
	md := lastMember(d.ix.SplitObject(d.raw, scratch[:0]), "metadata")
	if rawKind(md) != rawObject {
		return nil
	}
	return lastMember(d.ix.SplitObject(md, scratch[:0]), "ownerReferences")
}

// decodeOwners reads owner references; a value that is not a list of
// them reads as none (the API server refuses such an object anyway).
func decodeOwners(raw []byte) []ownerRef {
	var refs []ownerRef
	if rawKind(raw) == rawList {
		_ = json.Unmarshal(raw, &refs)
	}
	return refs
}

// containsOwner matches owner references by uid, which names one object
// for its whole life, or by kind and name where a uid is missing.
func containsOwner(refs []ownerRef, r ownerRef) bool {
	for _, o := range refs {
		if (r.UID != "" && o.UID == r.UID) || (r.UID == "" && o.UID == "" && o.Kind == r.Kind && o.Name == r.Name) {
			return true
		}
	}
	return false
}
