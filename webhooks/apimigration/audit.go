package apimigration

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/rule"
)

// CheckStoredVersions is the audit check of the Flux CRDs' stored
// versions.
const CheckStoredVersions = "stored-versions"

// crdGVK is what the audit reads and reports on.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Audit reports, for every Flux CRD the cluster serves, whether its
// status.storedVersions still lists a version the target release no
// longer serves (rule.Auditor). The API server refuses to drop a version
// from a CRD while storedVersions lists it, so upgrading Flux to the
// target fails on that CRD until `flux migrate` has rewritten the stored
// objects and trimmed the list. The cluster cache keeps CRDs as metadata
// only, so each Flux CRD is read by name through api: a handful of GETs.
func (r *Rule) Audit(ctx context.Context, api client.Reader) ([]rule.Finding, error) {
	served := r.view.served()
	if served == nil {
		return nil, errors.New("apimigration has not discovered the cluster's Flux kinds yet")
	}
	crds, err := readShapes(ctx, api, served)
	if err != nil {
		return nil, err
	}
	// Unpinned, the target is chosen from the same discovery answer and
	// CRDs the pass reads, not from the follower's copy, which may lag them
	// by a moment (a one-off pass of `steward audit` starts right after
	// the first answer).
	target := r.Target()
	if r.pin == nil {
		target = ClusterTarget(served, crds)
	}
	var out []rule.Finding
	for i := range apis {
		a := &apis[i]
		if crd := crds[schema.GroupResource{Group: a.Group, Resource: a.Resource}]; crd != nil {
			out = append(out, storedVersionsFinding(a, crd, target))
		}
	}
	return out, nil
}

// readShapes reads, by name, the CRD of every kind of the table that
// served names (served, or defined and not served yet). A CRD removed
// since is left out; any other error is returned.
func readShapes(ctx context.Context, api client.Reader, served *clustercache.Served) (map[schema.GroupResource]*CRDShape, error) {
	out := map[schema.GroupResource]*CRDShape{}
	for i := range apis {
		a := &apis[i]
		gr := schema.GroupResource{Group: a.Group, Resource: a.Resource}
		if served.Resources[gr] == nil && !served.CRDs[gr] {
			continue
		}
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		if err := api.Get(ctx, client.ObjectKey{Name: gr.String()}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue // removed since the last discovery
			}
			return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", gr, err)
		}
		out[gr] = shapeOf(a, crd.Object)
	}
	return out, nil
}

// storedVersionsFinding judges one Flux CRD's stored versions against the
// target release.
func storedVersionsFinding(a *API, crd *CRDShape, target Target) rule.Finding {
	stored := crd.Stored
	f := rule.Finding{
		Check:  CheckStoredVersions,
		Result: rule.AuditPass,
		Object: corev1.ObjectReference{
			APIVersion: crdGVK.GroupVersion().String(), Kind: crdGVK.Kind,
			Name: crd.Name, UID: types.UID(crd.UID),
		},
		Properties: map[string]string{
			"storedVersions": strings.Join(stored, ","),
			"target":         target.Name(),
		},
	}
	var removed, removedIn []string
	for _, v := range stored {
		if st, in := a.status(v, target.Release); st == RemovedVersion {
			removed = append(removed, a.Group+"/"+v)
			removedIn = append(removedIn, v+": "+in.String())
		}
	}
	if len(removed) == 0 {
		f.Message = fmt.Sprintf("%s: every version CustomResourceDefinition %s stores objects in is served by Flux %s", Name, crd.Name, target.Release)
		return f
	}
	f.Result = rule.AuditFail
	f.Properties["removedIn"] = strings.Join(removedIn, ", ")
	f.Message = fmt.Sprintf("%s: CustomResourceDefinition %s still lists %s in status.storedVersions, which Flux %s no longer serves (this cluster targets Flux %s); "+
		"the upgrade to Flux %s fails on this CRD until the objects stored in %s are rewritten. Run `flux migrate` (Flux CLI 2.7 or later) before upgrading to Flux %s",
		Name, crd.Name, strings.Join(removed, " and "), target.Release, target, target.Release, plural(len(removed), "it", "them"), target.Release)
	return f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// served is the cluster cache's latest discovery answer; nil until the
// first, or when the rule was never set up with a cluster cache.
func (v *view) served() *clustercache.Served {
	if v.discovered == nil {
		return nil
	}
	return v.discovered()
}

var _ rule.Auditor = (*Rule)(nil)
