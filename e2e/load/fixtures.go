package main

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Identities the workloads write as. Every authenticated user is a
// cluster-admin in the harness, so only admission decides.
const (
	agentUser      = "system:serviceaccount:cattle-fleet-system:fleet-agent"
	humanUser      = "jane"
	crossplaneUser = "system:serviceaccount:crossplane-system:crossplane"
	fluxUser       = "system:serviceaccount:flux-system:kustomize-controller"
)

var humanGroups = []string{"devs"}

// Namespaces the workloads write to.
const (
	fleetNamespace  = "bench-apps"
	fluxNamespace   = "bench-flux"
	claimsNamespace = "bench-team-db"
)

// benchLabel marks objects a workload created, so cleanup finds them.
const benchLabel = "bench.steward.dev/workload"

// policyProbeName is the Fleet-managed ConfigMap the switcher dry-runs
// changes of to see whether the policy is in effect.
const policyProbeName = "bench-policy-probe"

// Real upstream keys.
const (
	fleetHashLabel       = "objectset.rio.cattle.io/hash"
	fleetIDAnnotation    = "objectset.rio.cattle.io/id"
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
	managedByLabel       = "app.kubernetes.io/managed-by"
	claimNameLabel       = "crossplane.io/claim-name"
	claimNamespaceLabel  = "crossplane.io/claim-namespace"
	compositeLabel       = "crossplane.io/composite"
	externalName         = "crossplane.io/external-name"
	suspendedBy          = "steward.dev/suspended-by"
	suspendedAt          = "steward.dev/suspended-at"
)

// Custom resources.
var (
	claimGVR     = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "postgresqlinstances"}
	compositeGVR = schema.GroupVersionResource{Group: "database.example.org", Version: "v1alpha1", Resource: "xpostgresqlinstances"}
	managedGVR   = schema.GroupVersionResource{Group: "database.aws.example.org", Version: "v1beta1", Resource: "rdsinstances"}
	hrGVR        = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	hrOldGVR     = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2beta1", Resource: "helmreleases"}
	ksGVR        = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepoGVR   = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// fleetMeta is the metadata Fleet's agent puts on what it deploys from
// bundle deployment default-<app> (Helm release <app>).
func fleetMeta(name, app string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: fleetNamespace,
		Labels: map[string]string{
			fleetHashLabel:           "1f0c3ec2f7a5cb6e0b2f2c4d1c1e9f6a0a7a3c5b",
			managedByLabel:           "Helm",
			"app.kubernetes.io/name": app,
		},
		Annotations: map[string]string{
			fleetIDAnnotation:    "default-" + app,
			helmReleaseName:      app,
			helmReleaseNamespace: fleetNamespace,
		},
	}
}

// fleetConfigMap is a small application ConfigMap deployed by Fleet.
func fleetConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: fleetMeta(name, "web"),
		Data: map[string]string{
			"LOG_LEVEL":       "info",
			"HTTP_PORT":       "8080",
			"FEATURE_FLAGS":   "checkout-v2,search-cache",
			"UPSTREAM_URL":    "http://api.bench-apps.svc.cluster.local:8080",
			"CACHE_TTL":       "30s",
			"revision":        "0",
			"application.yml": "server:\n  port: 8080\nmanagement:\n  endpoints:\n    web:\n      exposure:\n        include: health,info,prometheus\n",
		},
	}
}

// fleetDeployment is a typical web Deployment deployed by Fleet.
func fleetDeployment(name string) *appsv1.Deployment {
	replicas := int32(3)
	labels := map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": name}
	runAsNonRoot, readOnly, noEscalation := true, true, false
	return &appsv1.Deployment{
		ObjectMeta: fleetMeta(name, "web"),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"checksum/config": "5e0c4f7c2d"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "web",
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: &runAsNonRoot, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.example.com/shop/web:1.42.0",
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
						Env: []corev1.EnvVar{
							{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, Key: "LOG_LEVEL"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "GOMAXPROCS", Value: "2"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 5},
						LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/livez", Port: intstr.FromString("http")}}, PeriodSeconds: 10, FailureThreshold: 6},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &noEscalation,
							ReadOnlyRootFilesystem:   &readOnly,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: "config", MountPath: "/etc/web"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
					},
				},
			},
		},
	}
}

// unstructuredObj builds a custom resource.
func unstructuredObj(apiVersion, kind, namespace, name string, labels, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	if len(annotations) > 0 {
		u.SetAnnotations(annotations)
	}
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
		map[string]string{claimNameLabel: claim, claimNamespaceLabel: claimsNamespace, compositeLabel: name}, nil,
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
		map[string]string{compositeLabel: xr, claimNameLabel: claim, claimNamespaceLabel: claimsNamespace},
		map[string]string{externalName: name},
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

// helmRelease is a HelmRelease in the v2 shape.
func helmRelease(name string, suspended bool) *unstructured.Unstructured {
	u := unstructuredObj("helm.toolkit.fluxcd.io/v2", "HelmRelease", fluxNamespace, name, nil, suspensionMarks(suspended),
		map[string]any{
			"interval": "10m",
			"chart": map[string]any{"spec": map[string]any{
				"chart": "podinfo", "version": "6.7.x",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"},
			}},
			"values":  map[string]any{"replicaCount": int64(2), "resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
			"suspend": suspended,
		})
	return u
}

// kustomization is a Flux Kustomization.
func kustomization(name string, suspended bool) *unstructured.Unstructured {
	return unstructuredObj("kustomize.toolkit.fluxcd.io/v1", "Kustomization", fluxNamespace, name, nil, suspensionMarks(suspended),
		map[string]any{
			"interval": "10m", "path": "./apps/" + name, "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet-infra"},
			"suspend":   suspended,
		})
}

// gitRepository is a Flux GitRepository.
func gitRepository(name string, suspended bool) *unstructured.Unstructured {
	return unstructuredObj("source.toolkit.fluxcd.io/v1", "GitRepository", fluxNamespace, name, nil, suspensionMarks(suspended),
		map[string]any{
			"interval": "1m", "url": "https://git.example.com/platform/" + name,
			"ref":     map[string]any{"branch": "main"},
			"suspend": suspended,
		})
}

// suspensionMarks are the annotations Steward records when an object is
// suspended; seeded objects carry them as if Steward had seen the suspend.
func suspensionMarks(suspended bool) map[string]string {
	if !suspended {
		return nil
	}
	return map[string]string{suspendedBy: "jane", suspendedAt: "2026-01-01T00:00:00Z"}
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
		Reason:              "ReconciliationSucceeded",
		Message:             "Reconciliation finished in 1.27s, next run in 10m0s",
		Source:              corev1.EventSource{Component: "kustomize-controller"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                corev1.EventTypeNormal,
		ReportingController: "kustomize-controller",
		ReportingInstance:   "kustomize-controller-7f9d8c6b5-x2x7q",
	}
}
