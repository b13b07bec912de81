package fleetguard

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

// The fixture edits every rule's tests share.
var (
	obj = admissiontest.Obj
	at  = admissiontest.At
	set = admissiontest.Set
	del = admissiontest.Del
)

// webDeployment is a Fleet-managed Deployment as the API server stores it
// (admissiontest.FleetDeployment).
const webDeployment = admissiontest.FleetDeployment

func container(i int, key string, value any) func(map[string]any) {
	return func(o map[string]any) {
		cs := at(o, "spec", "template", "spec")["containers"].([]any)
		cs[i].(map[string]any)[key] = value
	}
}

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulsetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	configmapsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterRolesGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	podsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

const (
	fleetAgent      = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	hpaController   = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
	garbageCollectr = "system:serviceaccount:kube-system:generic-garbage-collector"
)

// scaleObject is an autoscaling/v1 Scale of a workload in default as the
// API server sends it.
func scaleObject(name string, replicas int) map[string]any {
	return gitopstest.Scale("default", name, replicas)
}

// fakeParents is a client.Reader over a fixed set of workload metadata.
type fakeParents struct {
	objects map[string]metav1.ObjectMeta // by "Kind/ns/name"
	err     error
}

func (f fakeParents) Get(_ context.Context, key client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	if f.err != nil {
		return f.err
	}
	p := o.(*metav1.PartialObjectMetadata)
	gvk := p.GroupVersionKind()
	m, ok := f.objects[fmt.Sprintf("%s/%s/%s", gvk.Kind, key.Namespace, key.Name)]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	p.ObjectMeta = m
	return nil
}

func (f fakeParents) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not implemented")
}

// fleetMeta is the metadata of a Fleet-deployed workload named name.
func fleetMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "default",
		Labels: map[string]string{LabelHash: "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"},
		Annotations: map[string]string{
			AnnotationID:               "default-web-app",
			AnnotationReleaseName:      "web-app",
			AnnotationReleaseNamespace: "default",
		},
	}
}

var parents = fakeParents{objects: map[string]metav1.ObjectMeta{
	"Deployment/default/web":    replicasInGit(fleetMeta("web")),
	"StatefulSet/default/db":    replicasInGit(fleetMeta("db")),
	"Deployment/default/scaled": fleetMeta("scaled"),
	"Deployment/default/plain":  {Name: "plain", Namespace: "default", Labels: map[string]string{"app": "plain"}},
	"Deployment/default/rancher": {Name: "rancher", Namespace: "default",
		Labels:      map[string]string{LabelHash: "abc"},
		Annotations: map[string]string{AnnotationOwnerGVK: "management.cattle.io/v3, Kind=Cluster"}},
}}

// replicasInGit marks a cached workload whose chart declares its replicas,
// as trimWorkload does.
func replicasInGit(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Annotations[cachedReplicasAnnotation] = ""
	return m
}

// A bare Pod Fleet's agent deployed for bundle deployment web-app.
const webPod = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "web",
    "namespace": "default",
    "uid": "0d9c4f52-3b1e-4e8a-9a41-7f2c6b5d8e10",
    "labels": {"objectset.rio.cattle.io/hash": "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"},
    "annotations": {
      "meta.helm.sh/release-name": "web-app",
      "meta.helm.sh/release-namespace": "default",
      "objectset.rio.cattle.io/id": "default-web-app"
    }
  },
  "spec": {"containers": [{"name": "web", "image": "ghcr.io/example/web:1.4.2"}]},
  "status": {"phase": "Running"}
}`
