package bench

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Identities the workloads write as (every authenticated user is a
// cluster-admin in the harness, so only admission decides), the namespaces
// they write to, and the label that marks what a workload or a scenario
// created, so that cleanup finds it, with its values for what the scale
// scenarios seed aside.
const (
	AgentUser       = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	HumanUser       = "jane"
	CrossplaneUser  = "system:serviceaccount:crossplane-system:crossplane"
	FluxUser        = "system:serviceaccount:flux-system:kustomize-controller"
	FleetNamespace  = "bench-apps"
	FluxNamespace   = "bench-flux"
	ClaimsNamespace = "bench-team-db"
	Label           = "bench.steward.dev/workload"
	FleetScenario   = "fleet"
	KindsScenario   = "kinds"
)

// HumanGroups are HumanUser's groups.
func HumanGroups() []string { return []string{"devs"} }

// ClaimGVR is the seeded claims' resource.
func ClaimGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "postgresqlinstances"}
}

// ConfigMapsGVR is the ConfigMaps' resource.
func ConfigMapsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
}

// DeploymentsGVR is the Deployments' resource.
func DeploymentsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
}

// HelmReleaseV2beta1GVR is HelmReleases' resource at a deprecated version.
func HelmReleaseV2beta1GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2beta1", Resource: "helmreleases"}
}

// MRResources are the MR kinds seeded XRs compose, by kind: real
// provider-sql kinds (legacy cluster-scoped group), Database and Role,
// installed in every environment, and Grant and Schema, from
// e2e/upstream/provider-sql-scale. The map is the caller's own.
func MRResources() map[string]schema.GroupVersionResource { return maps.Clone(mrResources) }

// Custom resources.
var (
	compositeGVR = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "xpostgresqlinstances"}
	// fluxResources are the Flux kinds seeded, by kind.
	fluxResources = map[string]schema.GroupVersionResource{
		"HelmRelease":   {Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"},
		"Kustomization": {Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
		"GitRepository": {Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"},
	}
	// mrResources is what MRResources returns.
	mrResources = map[string]schema.GroupVersionResource{
		"Database": {Group: sqlGroup, Version: "v1alpha1", Resource: "databases"},
		"Role":     {Group: sqlGroup, Version: "v1alpha1", Resource: "roles"},
		"Schema":   {Group: sqlGroup, Version: "v1alpha1", Resource: "schemas"},
		"Grant":    {Group: sqlGroup, Version: "v1alpha1", Resource: "grants"},
	}
)

const sqlGroup = "postgresql.sql.crossplane.io"

//go:embed fixtures/fleet.yaml
var fleetYAML []byte

// fleetObjects are the ConfigMap and the Deployment in fixtures/fleet.yaml.
var fleetObjects = func() (objs struct {
	cm     *corev1.ConfigMap
	deploy *appsv1.Deployment
}) {
	docs := strings.Split(string(fleetYAML), "\n---\n")
	objs.cm, objs.deploy = &corev1.ConfigMap{}, &appsv1.Deployment{}
	if err := errors.Join(yaml.UnmarshalStrict([]byte(docs[0]+"\n"), objs.cm), yaml.UnmarshalStrict([]byte(docs[1]), objs.deploy)); err != nil {
		panic(fmt.Sprintf("fixtures/fleet.yaml: %v", err))
	}
	return objs
}()

// FleetConfigMap is a small application ConfigMap deployed by Fleet.
func FleetConfigMap(name string) *corev1.ConfigMap {
	cm := fleetObjects.cm.DeepCopy()
	cm.Name = name
	return cm
}

// FleetDeployment is a typical web Deployment deployed by Fleet.
func FleetDeployment(name string) *appsv1.Deployment {
	d := fleetObjects.deploy.DeepCopy()
	d.Name = name
	d.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] = name
	d.Spec.Template.Labels["app.kubernetes.io/instance"] = name
	return d
}

func unstructuredObj(apiVersion, kind, namespace, name string, labels, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// composedLabels are the labels Crossplane puts on an XR and its MRs.
func composedLabels(xr, claim string) map[string]string {
	return map[string]string{"crossplane.io/composite": xr, "crossplane.io/claim-name": claim, "crossplane.io/claim-namespace": ClaimsNamespace}
}

// composite is a v1 XR bound to claim <claim> in ClaimsNamespace, composing
// mrs.
func composite(name, claim string, mrs []*unstructured.Unstructured) *unstructured.Unstructured {
	refs := make([]any, len(mrs))
	for i, mr := range mrs {
		refs[i] = map[string]any{"apiVersion": mr.GetAPIVersion(), "kind": mr.GetKind(), "name": mr.GetName()}
	}
	return unstructuredObj("database.example.org/v1alpha1", "XPostgreSQLInstance", "", name, composedLabels(name, claim), nil,
		map[string]any{
			"parameters":     map[string]any{"storageGB": int64(20)},
			"compositionRef": map[string]any{"name": "xpostgresqlinstances.aws.database.example.org"},
			"claimRef":       map[string]any{"apiVersion": "database.example.org/v1alpha1", "kind": "PostgreSQLInstance", "name": claim, "namespace": ClaimsNamespace},
			"resourceRefs":   refs,
			"writeConnectionSecretToRef": map[string]any{
				"name": name + "-conn", "namespace": "crossplane-system",
			},
		})
}

// ComposedMR is a provider-sql MR as Crossplane composes it and its
// provider has adopted it: the composite's labels, the composition step,
// the external name, and the provider's finalizer.
func ComposedMR(kind, name, xr, claim, step string) *unstructured.Unstructured {
	db := xr + "-db"
	forProvider := map[string]map[string]any{
		"Database": {"encoding": "UTF8", "lcCType": "en_US.utf8", "lcCollate": "en_US.utf8", "connectionLimit": int64(50), "allowConnections": true, "owner": xr + "-owner"},
		"Role":     {"connectionLimit": int64(20), "privileges": map[string]any{"login": true, "createDb": false, "inherit": true}},
		"Schema":   {"database": db, "role": xr + "-owner", "revokePublicOnSchema": true},
		"Grant":    {"database": db, "role": xr + "-app", "privileges": []any{"CONNECT", "TEMPORARY"}, "withOption": "GRANT"},
	}[kind]
	spec := map[string]any{
		"forProvider":       forProvider,
		"providerConfigRef": map[string]any{"name": "default"},
		"deletionPolicy":    "Delete",
	}
	if kind == "Role" {
		spec["writeConnectionSecretToRef"] = map[string]any{"name": name, "namespace": "crossplane-system"}
	}
	mr := unstructuredObj(sqlGroup+"/v1alpha1", kind, "", name, composedLabels(xr, claim),
		map[string]string{"crossplane.io/external-name": name, "crossplane.io/composition-resource-name": step}, spec)
	mr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	return mr
}

// Claim is a PostgreSQLInstance claim as a developer writes it.
func Claim(name string) *unstructured.Unstructured {
	return unstructuredObj("database.example.org/v1alpha1", "PostgreSQLInstance", ClaimsNamespace, name,
		map[string]string{Label: "claim-create"}, nil,
		map[string]any{
			"parameters":                 map[string]any{"storageGB": int64(20)},
			"compositionSelector":        map[string]any{"matchLabels": map[string]any{"provider": "aws"}},
			"compositeDeletePolicy":      "Foreground",
			"writeConnectionSecretToRef": map[string]any{"name": name + "-conn"},
		})
}

// FluxObject is a Flux HelmRelease (v2), Kustomization or GitRepository
// (v1); a suspended one carries the annotations Steward records, as if it
// had seen the suspend.
func FluxObject(kind, name string, suspended bool) *unstructured.Unstructured {
	var marks map[string]string
	if suspended {
		marks = map[string]string{"steward.dev/suspended-by": "jane", "steward.dev/suspended-at": "2026-01-01T00:00:00Z"}
	}
	spec := map[string]map[string]any{
		"HelmRelease": {"interval": "10m", "chart": map[string]any{"spec": map[string]any{
			"chart": "podinfo", "version": "6.7.x", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"},
		}}, "values": map[string]any{"replicaCount": int64(2), "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}},
		"Kustomization": {"interval": "10m", "path": "./apps/" + name, "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet-infra"}},
		"GitRepository": {"interval": "1m", "url": "https://git.example.com/platform/" + name, "ref": map[string]any{"branch": "main"}},
	}[kind]
	spec["suspend"] = suspended
	return unstructuredObj(fluxResources[kind].GroupVersion().String(), kind, FluxNamespace, name, nil, marks, spec)
}

// FluxEvent is the Event kustomize-controller records after reconciling
// Kustomization ks.
func FluxEvent(ks string, seq int) *corev1.Event {
	now := metav1.NewTime(time.Now())
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x", ks, time.Now().UnixNano()+int64(seq)),
			Namespace:   FluxNamespace,
			Labels:      map[string]string{Label: "flux-event"},
			Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:9b5c4f1e2d3a" + strconv.Itoa(seq%10)},
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Kustomization", APIVersion: "kustomize.toolkit.fluxcd.io/v1", Namespace: FluxNamespace, Name: ks,
		},
		Reason: "ReconciliationSucceeded", Message: "Reconciliation finished in 1.27s, next run in 10m0s", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kustomize-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kustomize-controller", ReportingInstance: "kustomize-controller-7f9d8c6b5-x2x7q",
	}
}

// Fleet's agent: its field manager (Helm's default, the binary's name,
// cmd/fleetagent) and what it records on the objects of a bundle
// deployment.
const (
	fleetFieldManager = "fleetagent"
	fleetOwnerGVK     = "fleet.cattle.io/v1alpha1, Kind=BundleDeployment"
	fleetOwnerNS      = "cluster-fleet-default-c-7d2q9-5b8e3a1f4c6d"
)

// fleetWorkload is the i-th Fleet-managed Deployment as the agent writes
// it: Helm's labels and release annotations, wrangler's objectset id,
// owner and hash, and objectset.rio.cattle.io/applied, wrangler's record
// of the applied object: its JSON, gzipped, in base64.
func fleetWorkload(i int) (*appsv1.Deployment, error) {
	release := fmt.Sprintf("shop-%04d", i)
	d := FleetDeployment(release + "-web")
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Labels[Label] = FleetScenario
	d.Labels["objectset.rio.cattle.io/hash"] = fmt.Sprintf("%040x", uint64(i)*0x9e3779b97f4a7c15)
	d.Labels["app.kubernetes.io/instance"] = release
	d.Labels["helm.sh/chart"] = "web-1.42.0"
	d.Annotations = map[string]string{
		"objectset.rio.cattle.io/id":              "default-" + release,
		"objectset.rio.cattle.io/owner-gvk":       fleetOwnerGVK,
		"objectset.rio.cattle.io/owner-name":      release,
		"objectset.rio.cattle.io/owner-namespace": fleetOwnerNS,
		"meta.helm.sh/release-name":               release,
		"meta.helm.sh/release-namespace":          FleetNamespace,
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	d.Annotations["objectset.rio.cattle.io/applied"] = base64.StdEncoding.EncodeToString(buf.Bytes())
	return d, nil
}

// renamedCRD is base with kind DatabaseNNN in group
// kNNN.scale.sql.crossplane.io, labelled as the kinds scenario's.
func renamedCRD(base *apiextensionsv1.CustomResourceDefinition, i int) *apiextensionsv1.CustomResourceDefinition {
	crd := base.DeepCopy()
	crd.ObjectMeta = metav1.ObjectMeta{Labels: map[string]string{Label: KindsScenario}}
	kind := fmt.Sprintf("Database%03d", i)
	crd.Spec.Group = fmt.Sprintf("k%03d.scale.sql.crossplane.io", i)
	crd.Spec.Names.Kind, crd.Spec.Names.ListKind = kind, kind+"List"
	crd.Spec.Names.Singular, crd.Spec.Names.Plural = strings.ToLower(kind), strings.ToLower(kind)+"s"
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	return crd
}

// suffixLetters are the characters of generated name suffixes.
const suffixLetters = "bcdfghjklmnpqrstvwxz2456789"

// suffix is a deterministic five-letter suffix, like the random one
// Crossplane appends to a claim's XR and an XR's MRs.
func suffix(i int) string {
	x, b := uint32(i)*2654435761+12345, make([]byte, 5)
	for j := range b {
		b[j] = suffixLetters[x%uint32(len(suffixLetters))]
		x = x/uint32(len(suffixLetters)) ^ uint32(i)*40503
	}
	return string(b)
}
