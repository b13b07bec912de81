package fluxguard

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
)

var (
	externalArtifactsGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "externalartifacts"}
	namespacesGVR        = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

const generatorUID = "7d1c0f5e-2b3a-4c4d-9e8f-0a1b2c3d4e5f"

// appsGenerator is apps/monorepo as source-watcher 2.3 (Flux 2.10) leaves
// it: its inventory names the ExternalArtifact it generated and the
// Namespace spec.managedNamespaces made it manage (cluster-scoped, no
// namespace).
var appsGenerator = map[string]any{
	"apiVersion": "source.extensions.fluxcd.io/v1beta1",
	"kind":       "ArtifactGenerator",
	"metadata":   map[string]any{"name": "monorepo", "namespace": "apps", "uid": generatorUID, "resourceVersion": "1200"},
	"spec": map[string]any{
		"sources":           []any{map[string]any{"alias": "repo", "kind": "GitRepository", "name": "monorepo"}},
		"managedNamespaces": map[string]any{"allowedNames": []any{"ns.startsWith('team-')"}, "prune": true},
		"artifacts":         []any{map[string]any{"name": "frontend", "copy": []any{map[string]any{"from": "@repo/frontend/**", "to": "@artifact/"}}}},
	},
	"status": map[string]any{"inventory": []any{
		map[string]any{"kind": "ExternalArtifact", "name": "frontend", "namespace": "apps", "digest": "sha256:1a2b"},
		map[string]any{"name": "legacy", "namespace": "apps", "digest": "sha256:3c4d"},
		map[string]any{"kind": "Namespace", "name": "team-x", "digest": "sha256:5e6f"},
	}},
}

// generated is an object source-watcher applied for appsGenerator (or the
// generator of uid), with its field manager's entry.
func generated(kind, apiVersion, namespace, name, uid string, edits ...func(map[string]any)) map[string]any {
	return configMap(namespace, name, "x/y", append([]func(map[string]any){
		set(apiVersion, "apiVersion"), set(kind, "kind"), del("data"),
		set(map[string]any{"app.kubernetes.io/managed-by": "source-watcher", LabelArtifactGenerator: uid}, "metadata", "labels"),
		set(map[string]any{"sourceRef": map[string]any{"apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator", "name": "monorepo", "namespace": "apps"}}, "spec"),
		set([]any{map[string]any{"manager": "source-watcher", "operation": "Apply", "apiVersion": apiVersion, "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{"f:app.kubernetes.io/managed-by": map[string]any{}, "f:" + LabelArtifactGenerator: map[string]any{}}},
				"f:spec":     map[string]any{"f:sourceRef": map[string]any{}},
			}}}, "metadata", "managedFields"),
	}, edits...)...)
}

// TestArtifactGeneratorInventoryIsARecord: what an ArtifactGenerator's
// status.inventory lists, ExternalArtifacts and managed Namespaces, is
// that generator's; source-watcher applies it again, so a person's change
// is refused, and the generator's label alone proves nothing.
func TestArtifactGeneratorInventoryIsARecord(t *testing.T) {
	r := New(Config{}, breakGlass).WithOwners(cached(appsGenerator))
	const owner = "Flux ArtifactGenerator apps/monorepo (sources GitRepository apps/monorepo)"
	const hint = "to pause source-watcher, annotate ArtifactGenerator apps/monorepo with source.extensions.fluxcd.io/reconcile=disabled"
	cases := map[string]struct {
		reason string
		req    admission.Request
		want   admission.Response
	}{
		"ExternalArtifactEditIsRefused": {
			reason: "the inventory lists apps/frontend; source-watcher force-applies its sourceRef",
			req: admissiontest.Update(externalArtifactsGVR, "ExternalArtifact",
				generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "frontend", generatorUID),
				generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "frontend", generatorUID, set("other", "spec", "sourceRef", "name"))).Build(),
			want: admission.Denied("fluxguard: ExternalArtifact apps/frontend is managed by " + owner + "; source-watcher applies it again at its next reconcile. " +
				"Changed: /spec/sourceRef/name. Change it in the Git repository instead; " + hint + emergency),
		},
		"AnEntryWithoutKindIsAnExternalArtifact": {
			reason: "inventories written before source-watcher 2.3 have no kind: an ExternalArtifact",
			req:    admissiontest.Delete(externalArtifactsGVR, "ExternalArtifact", generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "legacy", generatorUID)).Build(),
			want: admission.Denied("fluxguard: ExternalArtifact apps/legacy is managed by " + owner + "; source-watcher applies it again at its next reconcile. " +
				"Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + hint + emergency),
		},
		"ManagedNamespaceDeleteIsRefused": {
			reason: "the inventory lists the cluster-scoped Namespace team-x (spec.managedNamespaces)",
			req:    admissiontest.Delete(namespacesGVR, "Namespace", generated("Namespace", "v1", "", "team-x", generatorUID, del("spec"))).Build(),
			want: admission.Denied("fluxguard: Namespace team-x is managed by " + owner + "; source-watcher applies it again at its next reconcile. " +
				"Deleting it is refused: Flux would re-create it. Remove it from the Git repository instead; " + hint + emergency),
		},
		"NotInTheInventoryIsAllowed": {
			reason: "the label alone proves nothing: apps/backend is not in the inventory",
			req:    admissiontest.Delete(externalArtifactsGVR, "ExternalArtifact", generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "backend", generatorUID)).Build(),
			want:   admission.Allowed("Flux ArtifactGenerator apps/monorepo does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"ANamespaceOfTheArtifactsNameIsNotListed": {
			reason: "the kind counts: a Namespace frontend is not the ExternalArtifact apps/frontend",
			req:    admissiontest.Delete(namespacesGVR, "Namespace", generated("Namespace", "v1", "", "frontend", generatorUID, del("spec"))).Build(),
			want:   admission.Allowed("Flux ArtifactGenerator apps/monorepo does not list the object in its inventory (pruning disabled, removed from Git, or labels set by hand): not Flux's"),
		},
		"UnknownGeneratorIsNotFound": {
			reason: "a UID no cached ArtifactGenerator has: nothing reverts the object",
			req:    admissiontest.Delete(externalArtifactsGVR, "ExternalArtifact", generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "frontend", "0000")).Build(),
			want:   admission.Allowed("owner not found: no Flux ArtifactGenerator has UID 0000, so source-watcher does not revert the object"),
		},
		"SourceWatcherWritesAreAllowed": {
			reason: "source-watcher is one of Flux's controllers",
			req: admissiontest.Delete(externalArtifactsGVR, "ExternalArtifact", generated("ExternalArtifact", "source.toolkit.fluxcd.io/v1", "apps", "frontend", generatorUID)).
				User("system:serviceaccount:flux-system:source-watcher", "system:serviceaccounts", "system:serviceaccounts:flux-system").Build(),
			want: admission.Allowed("written by a Flux controller"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.Handle(context.Background(), rule.NewRequest(tc.req))); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
