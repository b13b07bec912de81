package apimigration

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stewardhq/steward/webhooks/admissiontest"
)

// TestAdviceFollowsTheTarget pins, with the exact messages, what a write
// is told under each target: to move to the newest version the target
// serves, and `flux migrate` only where the target's CLI has it (2.7+).
func TestAdviceFollowsTheTarget(t *testing.T) {
	image := LookupKind(ImageGroup, "ImageRepository")
	helm := LookupKind(HelmGroup, "HelmRelease")
	alert := LookupKind(NotificationGroup, "Alert")
	cases := map[string]struct {
		reason  string
		api     *API
		version string
		target  string
		want    result
	}{
		"ImageV1beta2At26IsCurrent": {"Flux 2.6 serves no image v1: v1beta2 is its newest, not deprecated",
			image, "v1beta2", "2.6", result{Allowed: true, Code: http.StatusOK}},
		"ImageV1beta2At25ReadsThe26Row": {"a target older than the table reads its oldest release",
			image, "v1beta2", "2.5", result{Allowed: true, Code: http.StatusOK}},
		"ImageV1beta1At26MovesToV1beta2": {"2.6 drops nothing but 2.7 drops v1beta1; the target's newest is v1beta2, and 2.6 has no flux migrate",
			image, "v1beta1", "2.6", deprecatedResult(image, "v1beta1",
				"apimigration: image.toolkit.fluxcd.io/v1beta1 is deprecated and removed in Flux 2.7; use v1beta2")},
		"ImageV1beta2At27MovesToV1": {"2.7 serves v1 and marks v1beta2 deprecated",
			image, "v1beta2", "2.7", deprecatedResult(image, "v1beta2",
				"apimigration: image.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.9; use v1 (flux migrate)")},
		"ImageV1beta2At28MovesToV1": {"still served by 2.8",
			image, "v1beta2", "2.8", deprecatedResult(image, "v1beta2",
				"apimigration: image.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.9; use v1 (flux migrate)")},
		"ImageV1beta2At29Refused": {"2.9 removed it",
			image, "v1beta2", "2.9", result{Code: http.StatusForbidden, Message: "apimigration: ImageRepository apps/podinfo is written through " +
				"image.toolkit.fluxcd.io/v1beta2, which Flux 2.9 removed (this cluster targets Flux 2.9); change apiVersion to " +
				"image.toolkit.fluxcd.io/v1 in the manifest it comes from (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"}},
		"AlertV1beta3At29IsCurrent": {"2.9 stores Alert at v1beta3 and serves no v1",
			alert, "v1beta3", "2.9", result{Allowed: true, Code: http.StatusOK}},
		"AlertV1beta3At210MovesToV1": {"2.10 stores Alert at v1 and marks v1beta3 deprecated; no release of the table removes it yet",
			alert, "v1beta3", "2.10", deprecatedResult(alert, "v1beta3",
				"apimigration: notification.toolkit.fluxcd.io/v1beta3 is deprecated; use v1 (flux migrate)")},
		"AlertV1At210IsCurrent": {"v1 is 2.10's storage version",
			alert, "v1", "2.10", result{Allowed: true, Code: http.StatusOK}},
		"ImageV1At26Unknown": {"a version the target does not serve yet is not the rule's to refuse",
			image, "v1", "2.6", result{Allowed: true, Code: http.StatusOK}},
		"HelmV2beta1At26NoFluxMigrate": {"the default target's CLI has no flux migrate",
			helm, "v2beta1", "2.6", deprecatedResult(helm, "v2beta1",
				"apimigration: helm.toolkit.fluxcd.io/v2beta1 is deprecated and removed in Flux 2.7; use v2")},
		"HelmV2beta2At27FluxMigrate": {"2.7 has flux migrate",
			helm, "v2beta2", "2.7", deprecatedResult(helm, "v2beta2",
				"apimigration: helm.toolkit.fluxcd.io/v2beta2 is deprecated and removed in Flux 2.8; use v2 (flux migrate)")},
		"HelmV2beta1At30Refused": {"a target newer than the table reads its newest release",
			helm, "v2beta1", "3.0", result{Code: http.StatusForbidden, Message: "apimigration: HelmRelease apps/podinfo is written through " +
				"helm.toolkit.fluxcd.io/v2beta1, which Flux 2.7 removed (this cluster targets Flux 3.0); change apiVersion to " +
				"helm.toolkit.fluxcd.io/v2 in the manifest it comes from (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := tc.api
			req := admissiontest.Create(gvr(a, tc.version), a.Kind, obj(a, tc.version, nil, spec1)).Build()
			if diff := cmp.Diff(tc.want, handle(newRule(t, tc.target), req)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAdviceNamesOnlyServedVersions: under every release of the table,
// a deprecated or removed version is told to move to a version that
// release serves, and a deprecated one is marked only toward it.
func TestAdviceNamesOnlyServedVersions(t *testing.T) {
	for _, a := range apis {
		for _, r := range releases {
			s := a.Releases[a.row(r)]
			for _, v := range a.Versions() {
				f := Classify(a.Group, a.Kind, v, r)
				if f.Status == Untouched {
					continue
				}
				if !s.serves(f.Use) || f.Use != s.Storage {
					t.Errorf("%s %s at Flux %s: told to use %s; Flux %s serves %v (storage %s)", a.Kind, v, r, f.Use, r, s.Served, s.Storage)
				}
				// A deprecated version names the release that removes it,
				// unless every release of the table still serves it (Alert
				// v1beta3, deprecated in 2.10).
				stillServed := a.Releases[len(a.Releases)-1].serves(v)
				if f.Status == DeprecatedVersion && (!s.serves(v) || (f.RemovedIn == (Release{})) != stillServed) {
					t.Errorf("%s %s at Flux %s: deprecated but not served, or a removal the table does not record: %+v", a.Kind, v, r, f)
				}
			}
		}
	}
}

// deprecatedResult is a CREATE through a deprecated version: allowed,
// marked, warned.
func deprecatedResult(a *API, version, warning string) result {
	return result{Allowed: true, Code: http.StatusOK, Message: warning, Warnings: []string{warning},
		Patches: patchesOf(addAll(marked(a.Group+"/"+version, stamp)))}
}
