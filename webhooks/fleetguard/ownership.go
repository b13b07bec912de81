package fleetguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Fleet's ownership keys, as Fleet's agent writes them on every object it
// deploys (wrangler's objectset apply, used by Fleet's Helm post-renderer),
// and Helm's release annotations, which name the release Fleet installed.
const (
	// LabelHash marks an object as a member of an object set; the webhook's
	// objectSelector matches it, so unlabelled objects never reach Steward.
	LabelHash = "objectset.rio.cattle.io/hash"
	// AnnotationID names the object set: "default-<bundle deployment>",
	// with the agent scope appended when one is set.
	AnnotationID = "objectset.rio.cattle.io/id"
	// AnnotationOwnerGVK is set when an object set has an owning object.
	// Fleet's agent applies bundles without one; Rancher and Fleet's
	// controller apply their own objects with one, and those are not
	// bundle content.
	AnnotationOwnerGVK = "objectset.rio.cattle.io/owner-gvk"
	// Helm's release annotations.
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

// fleetIDPrefix is the label prefix Fleet's agent gives every object set
// id: the agent builds ids as SafeConcatName("default", bundleDeployment,
// [agentScope]), joining with "-" and shortening ids over 63 characters
// with a hash suffix.
const fleetIDPrefix = "default-"

// objectMeta is the part of an object's metadata this rule reads.
type objectMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// decodeMeta reads only the metadata of a raw object. Plain objects (all
// of the API server's) are read without decoding them; the rest are
// decoded, which words the errors.
func decodeMeta(raw []byte) (objectMeta, error) {
	if m, ok := strictMetaFromRaw(raw); ok {
		return m, nil
	}
	return decodeMetaJSON(raw)
}

// decodeMetaJSON decodes the object's metadata with encoding/json.
func decodeMetaJSON(raw []byte) (objectMeta, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return objectMeta{}, fmt.Errorf("object is empty")
	}
	var o struct {
		Metadata objectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return objectMeta{}, fmt.Errorf("decoding object metadata: %w", err)
	}
	return o.Metadata, nil
}

// managed reports whether the object carries Fleet's object-set label.
func (m objectMeta) managed() bool {
	_, ok := m.Labels[LabelHash]
	return ok
}

// appliedWithOwner reports whether the object set has an owning object,
// which Fleet's agent never sets on bundle content.
func (m objectMeta) appliedWithOwner() bool {
	_, ok := m.Annotations[AnnotationOwnerGVK]
	return ok
}

// ownershipKeys lists which of Fleet's two ownership keys the object has.
func (m objectMeta) ownershipKeys() []string {
	var keys []string
	if _, ok := m.Labels[LabelHash]; ok {
		keys = append(keys, "label "+LabelHash)
	}
	if _, ok := m.Annotations[AnnotationID]; ok {
		keys = append(keys, "annotation "+AnnotationID)
	}
	return keys
}

// strippedKeys lists the ownership keys old has and new lacks.
func strippedKeys(old, new objectMeta) []string {
	var keys []string
	if _, ok := old.Labels[LabelHash]; ok {
		if _, still := new.Labels[LabelHash]; !still {
			keys = append(keys, "label "+LabelHash)
		}
	}
	if _, ok := old.Annotations[AnnotationID]; ok {
		if _, still := new.Annotations[AnnotationID]; !still {
			keys = append(keys, "annotation "+AnnotationID)
		}
	}
	return keys
}

// bundleDeployment derives the bundle deployment's name from the object
// set id the way Fleet builds it: "default-" followed by the bundle
// deployment's name (and the agent scope, if the agent has one). An id
// without the prefix is shown as it is.
func bundleDeployment(id string) string {
	name := strings.TrimPrefix(id, fleetIDPrefix)
	if name == "-" {
		return ""
	}
	return name
}

// owner describes who owns the object, for denial messages: the Fleet
// bundle deployment and the Helm release, as far as they are known.
func (m objectMeta) owner() string {
	var parts []string
	if bd := bundleDeployment(m.Annotations[AnnotationID]); bd != "" {
		parts = append(parts, "bundle deployment "+bd)
	}
	if rel := m.Annotations[AnnotationReleaseName]; rel != "" {
		if ns := m.Annotations[AnnotationReleaseNamespace]; ns != "" {
			rel = ns + "/" + rel
		}
		parts = append(parts, "Helm release "+rel)
	}
	if len(parts) == 0 {
		if h := m.Labels[LabelHash]; h != "" {
			return "object set " + h
		}
		return "owner not recorded"
	}
	return strings.Join(parts, ", ")
}
