package fluxguard

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
)

// The fixture edits every rule's tests share.
var (
	obj = admissiontest.Obj
	at  = admissiontest.At
	set = admissiontest.Set
	del = admissiontest.Del
)

const (
	kustomizeController = "system:serviceaccount:flux-system:kustomize-controller"
	helmController      = "system:serviceaccount:flux-system:helm-controller"
	breakGlass          = "steward:break-glass"
)

var (
	deploymentsGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulsetsGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	configmapsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	servicesGVR       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	clusterRolesGVR   = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	kustomizationsGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// fakeOwners is a gitops.OwnerCache over owners kept by keepOwner, keyed
// "<group-resource>/<namespace>/<name>", as the informers' stores would
// hold them, and listed per resource in the order they were added. err
// makes every read fail, as a cache that cannot answer yet.
type fakeOwners struct {
	owners map[string]any
	lists  map[schema.GroupResource][]any
	err    error
}

var _ gitops.OwnerCache = fakeOwners{}

// cacheHolding is a fake cache holding the given owners.
func cacheHolding(kept ...*owner) fakeOwners {
	f := fakeOwners{owners: map[string]any{}, lists: map[schema.GroupResource][]any{}}
	for _, o := range kept {
		gr := kustomizations
		switch o.kind {
		case kindHelmRelease:
			gr = helmReleases
		case kindArtifactGenerator:
			gr = artifactGenerators
		}
		f.owners[gr.String()+"/"+o.Namespace+"/"+o.Name] = o
		f.lists[gr] = append(f.lists[gr], o)
	}
	return f
}

func (f fakeOwners) Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error) {
	if f.err != nil {
		return nil, false, f.err
	}
	o, ok := f.owners[gr.String()+"/"+namespace+"/"+name]
	return o, ok, nil
}

func (f fakeOwners) List(gr schema.GroupResource) ([]any, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.lists[gr], nil
}

// cached builds the fake cache from Flux objects given as JSON maps: each
// is encoded and decoded as the informer decodes the API server's
// answer, then passed through keepOwner, so the cache holds exactly what
// the transform keeps.
func cached(objs ...map[string]any) fakeOwners {
	kept := make([]*owner, len(objs))
	for i, o := range objs {
		kept[i] = keptOwner(o)
	}
	return cacheHolding(kept...)
}

// keptOwner is what keepOwner keeps of a Flux object given as a JSON map.
func keptOwner(o map[string]any) *owner {
	data, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	kept, err := keepOwner(u)
	if err != nil {
		panic(err)
	}
	return kept.(*owner)
}

func image(i int, value string) func(map[string]any) {
	return func(o map[string]any) {
		cs := at(o, "spec", "template", "spec")["containers"].([]any)
		cs[i].(map[string]any)["image"] = value
	}
}

// inventory sets a Flux owner's status.inventory, entries as Flux writes
// them: the id, and the version apart.
func inventory(ids ...string) func(map[string]any) {
	return func(o map[string]any) {
		entries := make([]any, len(ids))
		for i, id := range ids {
			entries[i] = map[string]any{"id": id, "v": "v1"}
		}
		at(o, "status", "inventory")["entries"] = entries
	}
}

// The Flux objects, as kustomize-controller and helm-controller leave
// them after a reconcile: spec, conditions, inventory, and the
// bookkeeping keepOwner must drop.

// appsKustomization is flux-system/apps: it applies ./apps/prod of the
// flux-system GitRepository as kustomize-controller itself (no service
// account), and was applied in turn by the flux-system Kustomization.
const appsKustomization = `{
  "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
  "kind": "Kustomization",
  "metadata": {
    "name": "apps",
    "namespace": "flux-system",
    "uid": "8d3f2b61-4c1e-4a0b-9e57-2f6a1c3d5e70",
    "resourceVersion": "913377",
    "generation": 4,
    "creationTimestamp": "2026-10-02T08:12:44Z",
    "finalizers": ["finalizers.fluxcd.io"],
    "labels": {
      "kustomize.toolkit.fluxcd.io/name": "flux-system",
      "kustomize.toolkit.fluxcd.io/namespace": "flux-system"
    },
    "managedFields": [
      {"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {"f:kustomize.toolkit.fluxcd.io/name": {}, "f:kustomize.toolkit.fluxcd.io/namespace": {}}},
         "f:spec": {"f:interval": {}, "f:path": {}, "f:prune": {}, "f:retryInterval": {}, "f:sourceRef": {"f:kind": {}, "f:name": {}}, "f:timeout": {}, "f:wait": {}}}},
      {"manager": "gotk-kustomize-controller", "operation": "Update", "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "time": "2026-11-27T09:41:07Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:conditions": {}, "f:inventory": {".": {}, "f:entries": {}}, "f:lastAppliedRevision": {}, "f:lastAttemptedRevision": {}, "f:observedGeneration": {}}}}
    ]
  },
  "spec": {
    "interval": "10m",
    "retryInterval": "2m",
    "timeout": "5m",
    "path": "./apps/prod",
    "prune": true,
    "wait": true,
    "sourceRef": {"kind": "GitRepository", "name": "flux-system"}
  },
  "status": {
    "observedGeneration": 4,
    "lastAppliedRevision": "main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
    "lastAttemptedRevision": "main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
    "conditions": [
      {"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision: main@sha1:1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "observedGeneration": 4, "lastTransitionTime": "2026-11-27T09:41:07Z"}
    ],
    "inventory": {"entries": []}
  }
}`

// kustomizationNamed is a Kustomization like apps, renamed, with edits.
func kustomizationNamed(namespace, name string, edits ...func(map[string]any)) map[string]any {
	return obj(appsKustomization, append([]func(map[string]any){
		set(name, "metadata", "name"), set(namespace, "metadata", "namespace"),
	}, edits...)...)
}

// podinfoHelmRelease is podinfo/podinfo, installed by helm-controller
// 1.5 (Flux 2.8), which records an inventory, with drift detection on.
const podinfoHelmRelease = `{
  "apiVersion": "helm.toolkit.fluxcd.io/v2",
  "kind": "HelmRelease",
  "metadata": {
    "name": "podinfo",
    "namespace": "podinfo",
    "uid": "f0e1d2c3-b4a5-4968-8776-655443322110",
    "resourceVersion": "913512",
    "generation": 2,
    "finalizers": ["finalizers.fluxcd.io"],
    "labels": {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
  },
  "spec": {
    "interval": "30m",
    "chart": {"spec": {"chart": "podinfo", "version": "6.x", "sourceRef": {"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}, "interval": "12h"}},
    "driftDetection": {"mode": "enabled"},
    "values": {"replicaCount": 2, "ingress": {"enabled": true, "hosts": [{"host": "podinfo.example.com"}]}}
  },
  "status": {
    "observedGeneration": 2,
    "lastAttemptedRevision": "6.7.1",
    "history": [
      {"name": "podinfo", "namespace": "podinfo", "version": 3, "status": "deployed", "chartName": "podinfo", "chartVersion": "6.7.1", "appVersion": "6.7.1", "configDigest": "sha256:4d9b0d3c", "digest": "sha256:9a8b7c6d"},
      {"name": "podinfo", "namespace": "podinfo", "version": 2, "status": "superseded", "chartName": "podinfo", "chartVersion": "6.7.0", "appVersion": "6.7.0"}
    ],
    "conditions": [{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded", "message": "Helm upgrade succeeded for release podinfo/podinfo.v3 with chart podinfo@6.7.1"}],
    "inventory": {"entries": [
      {"id": "podinfo_podinfo_apps_Deployment", "v": "v1"},
      {"id": "podinfo_podinfo__Service", "v": "v1"},
      {"id": "podinfo_podinfo-dashboards__ConfigMap", "v": "v1"},
      {"id": "podinfo_grafana-dashboards__ConfigMap", "v": "v1"},
      {"id": "podinfo_podinfo_autoscaling_HorizontalPodAutoscaler", "v": "v2"}
    ]}
  }
}`

// promStackHelmRelease is flux-system/kube-prometheus-stack as
// helm-controller before 1.5 leaves it: no inventory, and no drift
// detection (helm-controller's default). Its release lands in
// targetNamespace, named "<targetNamespace>-<name>", 57 characters, which
// Helm's 53-character limit makes helm-controller shorten.
const promStackHelmRelease = `{
  "apiVersion": "helm.toolkit.fluxcd.io/v2",
  "kind": "HelmRelease",
  "metadata": {
    "name": "kube-prometheus-stack",
    "namespace": "flux-system",
    "uid": "0a1b2c3d-4e5f-4607-8899-aabbccddeeff",
    "resourceVersion": "700001",
    "generation": 7
  },
  "spec": {
    "interval": "1h",
    "targetNamespace": "observability-monitoring-production",
    "chartRef": {"kind": "OCIRepository", "name": "kube-prometheus-stack"},
    "install": {"crds": "CreateReplace"}
  },
  "status": {
    "observedGeneration": 7,
    "lastAttemptedRevision": "66.2.1",
    "history": [{"name": "observability-monitoring-production-kube-87fe35748d90", "namespace": "observability-monitoring-production", "version": 12, "status": "deployed", "chartName": "kube-prometheus-stack", "chartVersion": "66.2.1"}]
  }
}`

// promStackRelease is the Helm release helm-controller installs for
// promStackHelmRelease: the first 40 characters of the 57-character name,
// "-", and 12 hex digits of its SHA-256 (computed apart, with sha256sum).
const promStackRelease = "observability-monitoring-production-kube-87fe35748d90"

// fluxOwners are the owners every test case's cache holds.
var fluxOwners = cached(
	// flux-system applied the apps Kustomization itself.
	kustomizationNamed("flux-system", "flux-system", set("./clusters/prod", "spec", "path"), del("metadata", "labels"),
		inventory("flux-system_apps_kustomize.toolkit.fluxcd.io_Kustomization", "flux-system_flux-system_source.toolkit.fluxcd.io_GitRepository")),
	kustomizationNamed("flux-system", "apps", inventory(
		"_apps__Namespace",
		"apps_podinfo_apps_Deployment",
		"apps_podinfo__Service",
		"apps_podinfo-config__ConfigMap",
		"apps_podinfo-cleanup_batch_CronJob",
		// An RBAC name's ":" is written "__".
		"_podinfo__reader_rbac.authorization.k8s.io_ClusterRole",
		// Also in the podinfo HelmRelease's inventory: two owners.
		"podinfo_podinfo-dashboards__ConfigMap",
		// Also in the autoscaled HelmRelease's, which ignores its replicas.
		"podinfo_autoscaled_apps_Deployment",
	)),
	// A tenant's Kustomizations, each applied as its own service account.
	kustomizationNamed("team-a", "frontend", set("flux-reconciler", "spec", "serviceAccountName"), set("./tenants/team-a", "spec", "path"),
		set(map[string]any{"kind": "GitRepository", "name": "team-a", "namespace": "team-a"}, "spec", "sourceRef"),
		inventory("team-a_web_apps_Deployment")),
	kustomizationNamed("team-b", "backend", set("flux-reconciler", "spec", "serviceAccountName"), set("./tenants/team-b", "spec", "path"),
		inventory("team-b_api_apps_Deployment")),
	kustomizationNamed("flux-system", "monitoring", set(true, "spec", "suspend"), set("./monitoring", "spec", "path"),
		inventory("monitoring_grafana_apps_Deployment", "podinfo_grafana-dashboards__ConfigMap")),
	// platform ignores some fields of what it applies (spec.ignore,
	// Flux 2.9), with and without target selectors.
	kustomizationNamed("flux-system", "platform", set("./platform", "spec", "path"), set("5m", "spec", "interval"),
		set([]any{
			map[string]any{"paths": []any{"/spec/replicas"}, "target": map[string]any{"kind": "Deployment"}},
			map[string]any{"paths": []any{"/data/generated"}, "target": map[string]any{"kind": "ConfigMap", "name": "cache-.*"}},
			map[string]any{"paths": []any{"/metadata/annotations/sidecar.istio.io~1inject"}, "target": map[string]any{"labelSelector": "app.kubernetes.io/part-of=mesh"}},
			map[string]any{"paths": []any{"/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt"}},
		}, "spec", "ignore"),
		inventory("platform_gateway_apps_Deployment", "platform_worker_apps_StatefulSet", "platform_cache-redis__ConfigMap", "platform_old-cache-redis__ConfigMap",
			"platform_settings__ConfigMap", "platform_gateway__Service")),
	// A Kustomization that has not applied anything yet.
	kustomizationNamed("flux-system", "fresh", del("status", "inventory")),
	obj(podinfoHelmRelease),
	obj(promStackHelmRelease),
	// A HelmRelease that ignores /spec/replicas of its Deployments
	// (spec.driftDetection.ignore).
	obj(podinfoHelmRelease, set("autoscaled", "metadata", "name"),
		set([]any{map[string]any{"paths": []any{"/spec/replicas"}, "target": map[string]any{"kind": "Deployment"}}}, "spec", "driftDetection", "ignore"),
		inventory("podinfo_autoscaled_apps_Deployment")),
	// A HelmRelease whose drift detection only warns.
	obj(podinfoHelmRelease, set("warned", "metadata", "name"), set("warn", "spec", "driftDetection", "mode"),
		inventory("podinfo_warned_apps_Deployment")),
)

// podinfoDeployment is apps/podinfo as the API server stores it after
// kustomize-controller applied it for flux-system/apps.
const podinfoDeployment = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "podinfo",
    "namespace": "apps",
    "uid": "3c2d1e0f-9a8b-4c7d-a6e5-f4d3c2b1a098",
    "resourceVersion": "913401",
    "generation": 6,
    "creationTimestamp": "2026-10-02T08:13:02Z",
    "labels": {
      "app.kubernetes.io/name": "podinfo",
      "kustomize.toolkit.fluxcd.io/name": "apps",
      "kustomize.toolkit.fluxcd.io/namespace": "flux-system"
    },
    "annotations": {"deployment.kubernetes.io/revision": "6"},
    "managedFields": [
      {"manager": "kustomize-controller", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-27T09:41:05Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}, "f:kustomize.toolkit.fluxcd.io/name": {}, "f:kustomize.toolkit.fluxcd.io/namespace": {}}},
         "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}},
           "f:spec": {"f:containers": {"k:{\"name\":\"podinfod\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {}}}}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-27T09:41:20Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:availableReplicas": {}, "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}, "f:updatedReplicas": {}}}}
    ]
  },
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app.kubernetes.io/name": "podinfo"}},
    "template": {
      "metadata": {"labels": {"app.kubernetes.io/name": "podinfo"}},
      "spec": {"containers": [{"name": "podinfod", "image": "ghcr.io/stefanprodan/podinfo:6.7.1", "ports": [{"name": "http", "containerPort": 9898, "protocol": "TCP"}]}]}
    }
  },
  "status": {"observedGeneration": 6, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}
}`

// deployment is podinfoDeployment moved to namespace/name and labelled
// for the Kustomization ks (namespace/name), with edits.
func deployment(namespace, name, ks string, edits ...func(map[string]any)) map[string]any {
	ksNS, ksName, _ := strings.Cut(ks, "/")
	return obj(podinfoDeployment, append([]func(map[string]any){
		set(name, "metadata", "name"), set(namespace, "metadata", "namespace"),
		set(ksName, "metadata", "labels", LabelKustomizationName), set(ksNS, "metadata", "labels", LabelKustomizationNamespace),
	}, edits...)...)
}

// helmLabelled replaces Flux's Kustomization labels with a HelmRelease's.
func helmLabelled(hr string) func(map[string]any) {
	ns, name, _ := strings.Cut(hr, "/")
	return func(o map[string]any) {
		l := at(o, "metadata", "labels")
		delete(l, LabelKustomizationName)
		delete(l, LabelKustomizationNamespace)
		l[LabelHelmReleaseName] = name
		l[LabelHelmReleaseNamespace] = ns
		// helm-controller, not kustomize-controller, applied it.
		for _, e := range at(o, "metadata")["managedFields"].([]any) {
			if e := e.(map[string]any); e["manager"] == "kustomize-controller" {
				e["manager"], e["operation"] = "helm-controller", "Update"
			}
		}
	}
}

// release sets the Helm annotations helm-controller's installs carry.
func release(namespace, name string) func(map[string]any) {
	return func(o map[string]any) {
		a := at(o, "metadata", "annotations")
		a["meta.helm.sh/release-name"] = name
		a["meta.helm.sh/release-namespace"] = namespace
	}
}

// configMap is a ConfigMap labelled for the Kustomization ks
// (namespace/name), with edits.
func configMap(namespace, name, ks string, edits ...func(map[string]any)) map[string]any {
	ksNS, ksName, _ := strings.Cut(ks, "/")
	o := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": name, "namespace": namespace, "uid": "6e5d4c3b-2a19-4807-b6f5-e4d3c2b1a0ff", "resourceVersion": "913402",
			"labels": map[string]any{LabelKustomizationName: ksName, LabelKustomizationNamespace: ksNS},
		},
		"data": map[string]any{"LOG_LEVEL": "info", "generated": "2026-11-26"},
	}
	admissiontest.AppliedBy("Apply", "kustomize-controller", "helm-controller")(o)
	for _, e := range edits {
		e(o)
	}
	return o
}

// scaleObject is an autoscaling/v1 Scale as the API server sends it.
func scaleObject(namespace, name string, replicas int) map[string]any {
	return map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": name, "namespace": namespace, "resourceVersion": "913401"},
		"spec":     map[string]any{"replicas": replicas},
		"status":   map[string]any{"replicas": 2, "selector": "app.kubernetes.io/name=" + name},
	}
}

// injected is Istio's injection annotation as Git declares it: Flux
// applied it.
func injected(o map[string]any) {
	set("true", "metadata", "annotations", "sidecar.istio.io/inject")(o)
	admissiontest.AppliedBy("Apply", "kustomize-controller")(o)
}

// patchedBy records a write of the whole data map under manager, as the
// API server records it before admission.
func patchedBy(manager string) func(map[string]any) {
	return func(o map[string]any) {
		md := at(o, "metadata")
		entries, _ := md["managedFields"].([]any)
		md["managedFields"] = append(entries, map[string]any{
			"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-11-27T10:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{"f:extra": map[string]any{}}},
		})
	}
}
