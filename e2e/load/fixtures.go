package main

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Identities the workloads write as (every authenticated user is a
// cluster-admin in the harness, so only admission decides), the namespaces
// they write to, the label that marks what a workload created, so cleanup
// finds it, and the Fleet-managed ConfigMap that configuration switches
// dry-run changes of to see whether the policy is in effect.
const (
	agentUser       = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	humanUser       = "jane"
	crossplaneUser  = "system:serviceaccount:crossplane-system:crossplane"
	fluxUser        = "system:serviceaccount:flux-system:kustomize-controller"
	fleetNamespace  = "bench-apps"
	fluxNamespace   = "bench-flux"
	claimsNamespace = "bench-team-db"
	benchLabel      = "bench.steward.dev/workload"
	policyProbeName = "bench-policy-probe"
)

var humanGroups = []string{"devs"}

// Custom resources.
var (
	claimGVR       = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "postgresqlinstances"}
	compositeGVR   = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "xpostgresqlinstances"}
	managedGVR     = schema.GroupVersionResource{Group: "database.aws.example.org", Version: "v1beta1", Resource: "rdsinstances"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	hrGVR          = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	hrOldGVR       = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2beta1", Resource: "helmreleases"}
	ksGVR          = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepoGVR     = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

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

// fleetConfigMap is a small application ConfigMap deployed by Fleet.
func fleetConfigMap(name string) *corev1.ConfigMap {
	cm := fleetObjects.cm.DeepCopy()
	cm.Name = name
	return cm
}

// fleetDeployment is a typical web Deployment deployed by Fleet.
func fleetDeployment(name string) *appsv1.Deployment {
	d := fleetObjects.deploy.DeepCopy()
	d.Name = name
	d.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] = name
	d.Spec.Template.Labels["app.kubernetes.io/instance"] = name
	return d
}

// unstructuredObj builds a custom resource.
func unstructuredObj(apiVersion, kind, namespace, name string, labels, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

// composite is a v1 XR bound to claim <claim> in claimsNamespace, composing
// the MRs named in mrs.
func composite(name, claim string, mrs []string) *unstructured.Unstructured {
	refs := make([]any, len(mrs))
	for i, mr := range mrs {
		refs[i] = map[string]any{"apiVersion": managedGVR.GroupVersion().String(), "kind": "RDSInstance", "name": mr}
	}
	return unstructuredObj("database.example.org/v1alpha1", "XPostgreSQLInstance", "", name,
		map[string]string{"crossplane.io/claim-name": claim, "crossplane.io/claim-namespace": claimsNamespace, "crossplane.io/composite": name}, nil,
		map[string]any{
			"parameters":     map[string]any{"storageGB": int64(20)},
			"compositionRef": map[string]any{"name": "xpostgresqlinstances.aws.database.example.org"},
			"claimRef":       map[string]any{"apiVersion": "database.example.org/v1alpha1", "kind": "PostgreSQLInstance", "name": claim, "namespace": claimsNamespace},
			"resourceRefs":   refs,
			"writeConnectionSecretToRef": map[string]any{
				"name": name + "-conn", "namespace": "crossplane-system",
			},
		})
}

// managed is an MR composed by XR xr (of claim claim).
func managed(name, xr, claim string) *unstructured.Unstructured {
	return unstructuredObj("database.aws.example.org/v1beta1", "RDSInstance", "", name,
		map[string]string{"crossplane.io/composite": xr, "crossplane.io/claim-name": claim, "crossplane.io/claim-namespace": claimsNamespace},
		map[string]string{"crossplane.io/external-name": name},
		map[string]any{
			"forProvider": map[string]any{
				"region": "eu-west-1", "dbInstanceClass": "db.t3.micro", "engine": "postgres", "engineVersion": "16.3",
				"allocatedStorage": int64(20), "masterUsername": "admin", "skipFinalSnapshot": true,
			},
			"providerConfigRef":          map[string]any{"name": "default"},
			"writeConnectionSecretToRef": map[string]any{"name": name, "namespace": "crossplane-system"},
			"deletionPolicy":             "Delete",
		})
}

// claim is a PostgreSQLInstance claim as a developer writes it.
func claim(name string) *unstructured.Unstructured {
	return unstructuredObj("database.example.org/v1alpha1", "PostgreSQLInstance", claimsNamespace, name,
		map[string]string{benchLabel: "claim-create"}, nil,
		map[string]any{
			"parameters":                 map[string]any{"storageGB": int64(20)},
			"compositionSelector":        map[string]any{"matchLabels": map[string]any{"provider": "aws"}},
			"compositeDeletePolicy":      "Foreground",
			"writeConnectionSecretToRef": map[string]any{"name": name + "-conn"},
		})
}

// fluxObject is a Flux HelmRelease (v2), Kustomization or GitRepository
// (v1); a suspended one carries the annotations Steward records, as if it
// had seen the suspend.
func fluxObject(kind, name string, suspended bool) *unstructured.Unstructured {
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
	apiVersion := map[string]string{"HelmRelease": "helm.toolkit.fluxcd.io/v2", "Kustomization": "kustomize.toolkit.fluxcd.io/v1", "GitRepository": "source.toolkit.fluxcd.io/v1"}[kind]
	return unstructuredObj(apiVersion, kind, fluxNamespace, name, nil, marks, spec)
}

// fluxEvent is the Event kustomize-controller records after reconciling
// Kustomization ks.
func fluxEvent(ks string, seq int) *corev1.Event {
	now := metav1.NewTime(time.Now())
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x", ks, time.Now().UnixNano()+int64(seq)),
			Namespace:   fluxNamespace,
			Labels:      map[string]string{benchLabel: "flux-event"},
			Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:9b5c4f1e2d3a" + strconv.Itoa(seq%10)},
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Kustomization", APIVersion: "kustomize.toolkit.fluxcd.io/v1", Namespace: fluxNamespace, Name: ks,
		},
		Reason: "ReconciliationSucceeded", Message: "Reconciliation finished in 1.27s, next run in 10m0s", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kustomize-controller"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kustomize-controller", ReportingInstance: "kustomize-controller-7f9d8c6b5-x2x7q",
	}
}
