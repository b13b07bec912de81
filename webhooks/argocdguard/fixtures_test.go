package argocdguard

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

// The fixture edits every rule's tests share.
var (
	obj = admissiontest.Obj
	at  = admissiontest.At
	set = admissiontest.Set
	del = admissiontest.Del
)

// guestbookApp is Argo CD Application argocd/guestbook as the API server
// sends it to the informer: synced at revision 4a5b6c7, with self-heal,
// after a sync that left Deployment default/old-worker behind for pruning.
const guestbookApp = `{
  "apiVersion": "argoproj.io/v1alpha1",
  "kind": "Application",
  "metadata": {
    "name": "guestbook",
    "namespace": "argocd",
    "uid": "9f1d2c3b-4a5e-4f60-8b7c-1d2e3f4a5b6c",
    "resourceVersion": "90211",
    "generation": 14,
    "creationTimestamp": "2026-01-10T08:00:00Z",
    "finalizers": ["resources-finalizer.argocd.argoproj.io"],
    "managedFields": [
      {"manager": "argocd-server", "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "time": "2026-01-10T08:00:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"resources-finalizer.argocd.argoproj.io\"": {}}}, "f:spec": {".": {}, "f:destination": {".": {}, "f:namespace": {}, "f:server": {}}, "f:project": {}, "f:source": {".": {}, "f:path": {}, "f:repoURL": {}, "f:targetRevision": {}}, "f:syncPolicy": {".": {}, "f:automated": {".": {}, "f:prune": {}, "f:selfHeal": {}}}}}},
      {"manager": "argocd-application-controller", "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "time": "2026-01-12T09:30:05Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:status": {".": {}, "f:health": {}, "f:history": {}, "f:operationState": {}, "f:reconciledAt": {}, "f:resources": {}, "f:sourceType": {}, "f:summary": {}, "f:sync": {}}}}
    ]
  },
  "spec": {
    "project": "default",
    "source": {"repoURL": "https://github.com/example/apps", "path": "guestbook", "targetRevision": "HEAD"},
    "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
    "syncPolicy": {"automated": {"prune": true, "selfHeal": true}, "syncOptions": ["CreateNamespace=true"]}
  },
  "status": {
    "sync": {
      "status": "OutOfSync",
      "revision": "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b",
      "comparedTo": {"source": {"repoURL": "https://github.com/example/apps", "path": "guestbook", "targetRevision": "HEAD"}, "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"}}
    },
    "health": {"status": "Healthy", "lastTransitionTime": "2026-01-12T09:30:05Z"},
    "resources": [
      {"version": "v1", "kind": "ConfigMap", "namespace": "default", "name": "web-config", "status": "Synced"},
      {"version": "v1", "kind": "Service", "namespace": "default", "name": "web", "status": "Synced", "health": {"status": "Healthy"}},
      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web", "status": "Synced", "health": {"status": "Healthy"}},
      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "old-worker", "status": "OutOfSync", "health": {"status": "Healthy"}, "requiresPruning": true},
      {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "web-reader", "status": "Synced"}
    ],
    "reconciledAt": "2026-01-12T09:35:00Z",
    "sourceType": "Directory",
    "summary": {"images": ["ghcr.io/example/proxy:2.0.1", "ghcr.io/example/web:1.4.2"]},
    "history": [{"id": 7, "revision": "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b", "deployedAt": "2026-01-12T09:30:00Z", "deployStartedAt": "2026-01-12T09:29:58Z",
      "source": {"repoURL": "https://github.com/example/apps", "path": "guestbook", "targetRevision": "HEAD"}}],
    "operationState": {
      "operation": {"sync": {"revision": "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b", "prune": true}, "initiatedBy": {"automated": true}, "retry": {"limit": 5}},
      "phase": "Succeeded", "message": "successfully synced (all tasks run)",
      "startedAt": "2026-01-12T09:29:58Z", "finishedAt": "2026-01-12T09:30:00Z",
      "syncResult": {"revision": "4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b", "source": {"repoURL": "https://github.com/example/apps", "path": "guestbook", "targetRevision": "HEAD"},
        "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web", "status": "Synced", "message": "deployment.apps/web configured", "hookPhase": "Running", "syncPhase": "Sync"}]}
    }
  }
}`

// webDeployment is Deployment default/web as the API server stores it
// after Argo CD synced it for Application argocd/guestbook (server-side
// apply, the default tracking method) and the deployment controller
// rolled it out.
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
    "labels": {"app.kubernetes.io/name": "web"},
    "annotations": {
      "argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web",
      "deployment.kubernetes.io/revision": "3"
    },
    "managedFields": [
      {"manager": "argocd-controller", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-12T09:30:00Z", "fieldsType": "FieldsV1",
       "fieldsV1": {
         "f:metadata": {"f:annotations": {"f:argocd.argoproj.io/tracking-id": {}}, "f:labels": {"f:app.kubernetes.io/name": {}}},
         "f:spec": {
           "f:replicas": {}, "f:selector": {},
           "f:template": {
             "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}},
             "f:spec": {
               "f:containers": {
                 "k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}, "f:name": {}},
                 "k:{\"name\":\"web\"}": {".": {}, "f:env": {"k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\"name\":\"PORT\"}": {".": {}, "f:name": {}, "f:value": {}}},
                   "f:image": {}, "f:name": {},
                   "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}}},
                   "f:readinessProbe": {"f:httpGet": {"f:path": {}, "f:port": {}}},
                   "f:resources": {"f:limits": {"f:memory": {}}, "f:requests": {"f:cpu": {}, "f:memory": {}}}}},
               "f:securityContext": {"f:runAsNonRoot": {}}}}}}},
      {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-12T09:30:01Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}}}}},
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

func container(i int, key string, value any) func(map[string]any) {
	return func(o map[string]any) {
		cs := at(o, "spec", "template", "spec")["containers"].([]any)
		cs[i].(map[string]any)[key] = value
	}
}

// trackedAs sets the object's tracking id.
func trackedAs(id string) func(map[string]any) {
	return set(id, "metadata", "annotations", AnnotationTrackingID)
}

// named renames an object (and its namespace, when ns is not "").
func named(ns, name string) func(map[string]any) {
	return func(o map[string]any) {
		at(o, "metadata")["name"] = name
		if ns != "" {
			at(o, "metadata")["namespace"] = ns
		}
	}
}

// ignoring sets an Application's spec.ignoreDifferences.
func ignoring(entries ...map[string]any) func(map[string]any) {
	list := make([]any, len(entries))
	for i, e := range entries {
		list[i] = e
	}
	return set(list, "spec", "ignoreDifferences")
}

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmapsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterRolesGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

const (
	argoController  = "system:serviceaccount:argocd:argocd-application-controller"
	argoServer      = "system:serviceaccount:argocd:argocd-server"
	garbageCollectr = "system:serviceaccount:kube-system:generic-garbage-collector"
	hpaController   = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
)

// keep runs an Application, as the API server sends it, through the
// informer's transform, decoded as the informer decodes it.
func keep(app map[string]any) *application {
	data, err := json.Marshal(app)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	out, err := keepApplication(u)
	if err != nil {
		panic(err)
	}
	a := out.(*application)
	if again, err := keepApplication(a); err != nil || again != any(a) {
		panic(fmt.Sprintf("keepApplication does not accept its own output: %v, %v", again, err))
	}
	return a
}

// fakeApps is the Applications' cache: what keepApplication kept of each,
// by namespace and name.
type fakeApps struct {
	apps map[string]*application
	// projects are AppProjects, by namespace/name.
	projects map[string]*project
	// list holds apps in the order of their keys, as List returns them.
	list []any
	err  error
}

var _ gitops.OwnerCache = (*fakeApps)(nil)

// appsCache caches Applications given as the API server sends them.
func appsCache(apps ...map[string]any) *fakeApps {
	f := &fakeApps{apps: map[string]*application{}}
	for _, app := range apps {
		a := keep(app)
		f.apps[a.Namespace+"/"+a.Name] = a
	}
	keys := make([]string, 0, len(f.apps))
	for k := range f.apps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f.list = append(f.list, f.apps[k])
	}
	return f
}

func (f *fakeApps) Lookup(gr schema.GroupResource, namespace, name string) (any, bool, error) {
	if f.err != nil {
		return nil, false, f.err
	}
	if gr == appProjects && f.projects != nil {
		p, ok := f.projects[namespace+"/"+name]
		return p, ok, nil
	}
	if gr != applications {
		return nil, false, fmt.Errorf("%s is not cached", gr)
	}
	a, ok := f.apps[namespace+"/"+name]
	if !ok {
		return nil, false, nil
	}
	return a, true, nil
}

func (f *fakeApps) List(gr schema.GroupResource) ([]any, error) {
	if f.err != nil {
		return nil, f.err
	}
	if gr != applications {
		return nil, fmt.Errorf("%s is not cached", gr)
	}
	return slices.Clone(f.list), nil
}

// scaleObject is an autoscaling/v1 Scale of a workload in default as the
// API server sends it.
func scaleObject(name string, replicas int) map[string]any {
	return gitopstest.Scale("default", name, replicas)
}
