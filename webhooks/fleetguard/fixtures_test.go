package fleetguard

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Deployment as the API server stores it after Fleet's agent deployed
// bundle deployment web-app as Helm release default/web-app and the
// deployment controller rolled it out: managedFields of every writer (most
// of the metadata's bytes) and the controller's status.
const webDeployment = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "web",
    "namespace": "default",
    "uid": "5b1e0c8e-8f7a-4bf0-9f62-0c0e3c1d2a11",
    "resourceVersion": "48213",
    "generation": 3,
    "creationTimestamp": "2026-01-12T09:30:00Z",
    "labels": {
      "app.kubernetes.io/managed-by": "Helm",
      "app.kubernetes.io/name": "web",
      "objectset.rio.cattle.io/hash": "3e4c9a2f6b0d8e1a7c5b9d3f2e6a8c0b4d7f1e9a"
    },
    "annotations": {
      "deployment.kubernetes.io/revision": "3",
      "meta.helm.sh/release-name": "web-app",
      "meta.helm.sh/release-namespace": "default",
      "objectset.rio.cattle.io/id": "default-web-app"
    },
    "managedFields": [
      {"manager": "fleetagent", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-12T09:30:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {
         "f:metadata": {
           "f:annotations": {".": {}, "f:meta.helm.sh/release-name": {}, "f:meta.helm.sh/release-namespace": {}, "f:objectset.rio.cattle.io/id": {}},
           "f:labels": {".": {}, "f:app.kubernetes.io/managed-by": {}, "f:app.kubernetes.io/name": {}, "f:objectset.rio.cattle.io/hash": {}}},
         "f:spec": {
           "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
           "f:selector": {},
           "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
           "f:template": {
             "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/name": {}}},
             "f:spec": {
               "f:containers": {
                 "k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}},
                 "k:{\"name\":\"web\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\"name\":\"PORT\"}": {".": {}, "f:name": {}, "f:value": {}}},
                   "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                   "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                   "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
                   "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                   "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
               "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
               "f:securityContext": {".": {}, "f:runAsNonRoot": {}},
               "f:terminationGracePeriodSeconds": {}}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-12T09:30:01Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-12T09:31:00Z", "fieldsType": "FieldsV1", "subresource": "status",
       "fieldsV1": {"f:status": {"f:availableReplicas": {}, "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
         "k:{\"type\":\"Progressing\"}": {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}},
         "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}, "f:updatedReplicas": {}}}}
    ]
  },
  "spec": {
    "replicas": 3,
    "revisionHistoryLimit": 10,
    "progressDeadlineSeconds": 600,
    "selector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    "template": {
      "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
      "spec": {
        "containers": [
          {"name": "web", "image": "ghcr.io/example/web:1.4.2", "imagePullPolicy": "IfNotPresent",
           "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
           "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "PORT", "value": "8080"}],
           "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
           "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
           "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"},
          {"name": "proxy", "image": "ghcr.io/example/proxy:2.0.1", "imagePullPolicy": "IfNotPresent",
           "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {"runAsNonRoot": true},
        "schedulerName": "default-scheduler"
      }
    }
  },
  "status": {
    "observedGeneration": 3,
    "replicas": 3,
    "updatedReplicas": 3,
    "readyReplicas": 3,
    "availableReplicas": 3,
    "conditions": [
      {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.", "lastUpdateTime": "2026-01-12T09:31:00Z", "lastTransitionTime": "2026-01-12T09:31:00Z"},
      {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"web-7c9f8d6b5d\" has successfully progressed.", "lastUpdateTime": "2026-01-12T09:31:00Z", "lastTransitionTime": "2026-01-12T09:30:00Z"}
    ]
  }
}`

// obj returns a fresh copy of a JSON fixture with edits applied.
func obj(fixture string, edits ...func(o map[string]any)) map[string]any {
	var o map[string]any
	if err := json.Unmarshal([]byte(fixture), &o); err != nil {
		panic(err)
	}
	for _, e := range edits {
		e(o)
	}
	return o
}

// at returns the map at a path of keys, creating maps on the way.
func at(o map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := o[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			o[k] = next
		}
		o = next
	}
	return o
}

func set(value any, keys ...string) func(map[string]any) {
	return func(o map[string]any) { at(o, keys[:len(keys)-1]...)[keys[len(keys)-1]] = value }
}

func del(keys ...string) func(map[string]any) {
	return func(o map[string]any) { delete(at(o, keys[:len(keys)-1]...), keys[len(keys)-1]) }
}

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

// scaleObject is an autoscaling/v1 Scale as the API server sends it.
func scaleObject(name string, replicas int) map[string]any {
	return map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": "48213"},
		"spec":     map[string]any{"replicas": replicas},
		"status":   map[string]any{"replicas": 3, "selector": "app.kubernetes.io/name=" + name},
	}
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
	"Deployment/default/web":   fleetMeta("web"),
	"StatefulSet/default/db":   fleetMeta("db"),
	"Deployment/default/plain": {Name: "plain", Namespace: "default", Labels: map[string]string{"app": "plain"}},
	"Deployment/default/rancher": {Name: "rancher", Namespace: "default",
		Labels:      map[string]string{LabelHash: "abc"},
		Annotations: map[string]string{AnnotationOwnerGVK: "management.cattle.io/v3, Kind=Cluster"}},
}}

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
