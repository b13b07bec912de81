package apimigration

import (
	"slices"
	"strings"
)

// addedField is a schema field a Flux release added to one version of a
// kind's CRD. Where releases serve a kind at the same versions (2.8, 2.9
// and 2.10 serve Kustomization at v1 only), the fields its CRD has tell
// them apart: a CRD with the field is of that release or a later one, a
// CRD without it of an earlier one. TestAddedFieldsMatchFluxCRDs holds
// every entry to the vendored CRDs.
type addedField struct {
	since   Release
	group   string
	kind    string
	version string
	// path is the field's path in the object, dot-separated, through
	// object properties only.
	path string
}

// addedFields are the fields that tell apart releases whose CRDs serve the
// same versions, found by comparing each release's vendored CRDs with the
// previous one's.
var addedFields = []addedField{
	{flux29, KustomizeGroup, "Kustomization", "v1", "spec.ignore"},
	{flux29, HelmGroup, "HelmRelease", "v2", "spec.postRenderStrategy"},
	{flux29, SourceGroup, "OCIRepository", "v1", "spec.verify.trustedRootSecretRef"},
	{flux29, NotificationGroup, "Receiver", "v1", "spec.oidcProviders"},
	{flux29, ImageGroup, "ImageUpdateAutomation", "v1", "spec.git.commit.signingKey.type"},
	{flux210, HelmGroup, "HelmRelease", "v2", "spec.chart.kind"},
	{flux210, SourceGroup, "GitRepository", "v1", "status.sourceVerificationFingerprint"},
	{flux210, SourceGroup, "OCIRepository", "v1", "status.sourceVerificationFingerprint"},
	{flux210, ImageGroup, "ImageUpdateAutomation", "v1", "spec.policyChangeDelay"},
}

// fieldsOf lists the added fields of a kind.
func fieldsOf(a *API) []addedField {
	var out []addedField
	for _, f := range addedFields {
		if f.group == a.Group && f.kind == a.Kind {
			out = append(out, f)
		}
	}
	return out
}

// key names the field in a CRDShape: "v1:spec.ignore".
func (f addedField) key() string { return f.version + ":" + f.path }

// CRDShape is what one installed Flux CRD tells of its release beyond the
// versions discovery lists.
type CRDShape struct {
	// Name and UID are the CRD's, for the audit's findings.
	Name string
	UID  string
	// Served are the versions it serves; Deprecated those it marks
	// `deprecated: true`.
	Served, Deprecated []string
	// Stored is status.storedVersions.
	Stored []string
	// Fields are the kind's added fields, by key, that its schema has.
	Fields map[string]bool
}

// shapeOf reads the shape of a Flux kind's CRD from the CRD as the API
// server returns it (decoded JSON). Anything missing or of another type is
// read as absent: a CRD the reader cannot make sense of narrows nothing.
func shapeOf(a *API, crd map[string]any) *CRDShape {
	s := &CRDShape{Fields: map[string]bool{}}
	meta, _ := crd["metadata"].(map[string]any)
	s.Name, _ = meta["name"].(string)
	s.UID, _ = meta["uid"].(string)
	status, _ := crd["status"].(map[string]any)
	s.Stored = stringsOf(status["storedVersions"])
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	fields := fieldsOf(a)
	for _, item := range versions {
		v, _ := item.(map[string]any)
		name, _ := v["name"].(string)
		if served, _ := v["served"].(bool); !served || name == "" {
			continue
		}
		s.Served = append(s.Served, name)
		if deprecated, _ := v["deprecated"].(bool); deprecated {
			s.Deprecated = append(s.Deprecated, name)
		}
		schema, _ := v["schema"].(map[string]any)
		root, _ := schema["openAPIV3Schema"].(map[string]any)
		for _, f := range fields {
			if f.version == name && hasProperty(root, f.path) {
				s.Fields[f.key()] = true
			}
		}
	}
	return s
}

// hasProperty reports whether an OpenAPI v3 schema declares the property
// at path (dot-separated, through nested objects' properties).
func hasProperty(schema map[string]any, path string) bool {
	for _, name := range strings.Split(path, ".") {
		props, _ := schema["properties"].(map[string]any)
		next, ok := props[name].(map[string]any)
		if !ok {
			return false
		}
		schema = next
	}
	return true
}

// stringsOf reads a JSON array of strings, skipping anything else.
func stringsOf(v any) []string {
	items, _ := v.([]any)
	var out []string
	for _, item := range items {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// fits reports whether a CRD of this shape can be release r's: it marks
// deprecated the versions r's CRD marks, and has exactly the added fields
// r's CRD has among those of the versions it serves.
func (s *CRDShape) fits(a *API, r Release) bool {
	if len(s.Served) == 0 {
		return true // nothing read: it tells nothing
	}
	row := &a.Releases[a.row(r)]
	if !sameVersions(s.Deprecated, row.Deprecated) {
		return false
	}
	for _, f := range fieldsOf(a) {
		if !slices.Contains(s.Served, f.version) {
			continue
		}
		if s.Fields[f.key()] != r.AtLeast(f.since) {
			return false
		}
	}
	return true
}
