package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const advFleetNS = "adversary-fleet"

// advFleetObjects are what Fleet's agent deploys for bundle deployment
// web-app: one object of each kind whose status strategy keeps metadata
// changes, a custom resource with a status subresource, a bare Pod, a
// ReplicationController and a namespace of its own.
const advFleetObjects = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: ghcr.io/example/web:1.4.2}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}], selector: {app: web}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: ghcr.io/example/db:15}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: ghcr.io/example/agent:2}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: backup, image: ghcr.io/example/backup:1}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: web, image: ghcr.io/example/web:1.4.2, resources: {requests: {cpu: 100m}, limits: {cpu: 100m}}}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 1
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: legacy, image: ghcr.io/example/legacy:1}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app}
spec: {interval: 5m, url: "https://github.com/example/app"}
`

// withFleetMeta puts Fleet's labels and annotations, and the namespace, on
// every document of docs.
func withFleetMeta(docs, namespace string) string {
	meta := fleetMeta("")
	var labels, annotations []string
	for k, v := range meta.Labels {
		labels = append(labels, fmt.Sprintf("%q: %q", k, v))
	}
	for k, v := range meta.Annotations {
		if k == "meta.helm.sh/release-namespace" {
			v = namespace
		}
		annotations = append(annotations, fmt.Sprintf("%q: %q", k, v))
	}
	extra := fmt.Sprintf(", namespace: %s, labels: {%s}, annotations: {%s}}", namespace, strings.Join(labels, ", "), strings.Join(annotations, ", "))
	var out []string
	for _, d := range strings.Split(docs, "\n---\n") {
		// Every document's metadata is a one-line flow mapping ending in "}".
		out = append(out, strings.Replace(d, "}\n", extra+"\n", 1))
	}
	return strings.Join(out, "\n---\n")
}

// TestAdversarialFleetguard runs every known chain against Fleet-managed
// objects: none may change or delete what the agent deployed.
func TestAdversarialFleetguard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)

	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: advFleetNS}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Kubectl(ctx, withFleetMeta(strings.TrimSpace(advFleetObjects), advFleetNS), "--as", fleetAgentUser, "apply", "-f", "-"); err != nil {
		t.Fatalf("the agent deploys the bundle: %v", err)
	}
	nsMeta := fleetMeta(advFleetNS + "-owned")
	nsMeta.Namespace = ""
	nsObj := &corev1.Namespace{ObjectMeta: nsMeta}
	agent, err := env.As(fleetAgentUser)
	if err != nil {
		t.Fatal(err)
	}
	// It writes under its field manager, as Fleet's agent does: its managedFields
	// entry says which fields are Git's.
	agent = client.WithFieldOwner(agent, "fleetagent")
	if err := agent.Create(ctx, nsObj); err != nil {
		t.Fatalf("the agent deploys Namespace %s: %v", nsObj.Name, err)
	}
	mallory, err := env.As(adversary)
	if err != nil {
		t.Fatal(err)
	}
	// The scale webhook reads the ReplicationController's labels from
	// Steward's cache, which sees the agent's create a moment later; the
	// chain below fails if it never does.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, _, err := env.Kubectl(ctx, "", "--as", adversary, "-n", advFleetNS, "scale", "rc", "legacy", "--replicas=2", "--dry-run=server"); err != nil {
			break
		}
	}

	const (
		stripped  = "Removing Fleet's ownership label objectset.rio.cattle.io/hash is refused"
		deleting  = "Deleting it is refused: Fleet would re-create it."
		ownerGVK  = "Changed: /metadata/annotations/objectset.rio.cattle.io~1owner-gvk."
		newOwner  = "Adding the owner reference ConfigMap bait is refused"
		stripHash = `[{"op":"remove","path":"/metadata/labels/objectset.rio.cattle.io~1hash"}]`
	)
	in := func(args ...string) []string { return append([]string{"-n", advFleetNS}, args...) }

	chains := []chain{{
		name: "DeploymentOwnerAnnotationThroughStatusThenImageChange",
		steps: []step{
			{what: "add objectset.rio.cattle.io/owner-gvk through /status", refused: ownerGVK,
				kubectl: in("patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", `{"metadata":{"annotations":{"objectset.rio.cattle.io/owner-gvk":"v1, Kind=Namespace"}}}`)},
			{what: "change the image", refused: "Changed: /spec/template/spec/containers/0/image.",
				kubectl: in("set", "image", "deployment/web", "web=ghcr.io/example/web:6.6.6")},
		},
	}}
	for _, kind := range []string{"service/web", "persistentvolumeclaim/data", "statefulset/db", "daemonset/agent", "cronjob/backup", "ingress/web", "poddisruptionbudget/web", "pod/web"} {
		chains = append(chains, chain{
			name: "StripLabelThroughStatusThenDelete/" + kind,
			steps: []step{
				{what: "remove Fleet's hash label through /status", refused: stripped,
					kubectl: in("patch", kind, "--subresource=status", "--type=json", "-p", stripHash)},
				{what: "delete it", refused: deleting, kubectl: in("delete", kind, "--wait=false")},
			},
		})
	}
	chains = append(chains,
		chain{
			name: "StripLabelThroughStatusOfACustomResourceThenDelete",
			steps: []step{
				// The API server keeps a custom resource's metadata on a
				// status write; the label stays, so the delete is refused.
				{what: "remove Fleet's hash label through the GitRepository's /status", allowed: "custom resources' status writes store no metadata change, so the label stays",
					kubectl: in("patch", "gitrepository", "app", "--subresource=status", "--type=json", "-p", stripHash)},
				{what: "delete it", refused: deleting, kubectl: in("delete", "gitrepository", "app", "--wait=false")},
			},
		},
		chain{
			name: "OwnerReferenceToAnObjectTheAdversaryOwns",
			steps: []step{
				{what: "create a ConfigMap to own the Deployment", allowed: "an unlabelled object of one's own is no business of fleetguard",
					kubectl: in("create", "configmap", "bait")},
				{what: "make the ConfigMap an owner of the Deployment", refused: newOwner, do: func(ctx context.Context) error {
					return addOwner(ctx, mallory, "bait", false)
				}},
				{what: "make the ConfigMap an owner of the Deployment through /status", refused: newOwner, do: func(ctx context.Context) error {
					return addOwner(ctx, mallory, "bait", true)
				}},
			},
		},
		chain{
			name: "UnguardedSubresources",
			steps: []step{
				{what: "kubectl debug adds an ephemeral container to the Pod", refused: "Changed: /spec/ephemeralContainers",
					kubectl: in("debug", "pod/web", "--image=busybox", "--container=dbg")},
				{what: "resize the Pod in place", refused: "Changed: /spec/containers/0/resources",
					skip:    unlessServed(t, "v1", "pods/resize", "Kubernetes serves it from 1.32; earlier releases resize in place, where their InPlacePodVerticalScaling gate is on, by an update of the Pod, which fleetguard judges as any other"),
					kubectl: in("patch", "pod", "web", "--subresource=resize", "--type=merge", "-p", `{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`)},
				{what: "scale the ReplicationController", refused: "Changed: /spec/replicas.",
					kubectl: in("scale", "rc", "legacy", "--replicas=3")},
			},
		},
		chain{
			name: "LabelsThatMoveTheObjectOutOfTheSelector",
			steps: []step{
				{what: "change the hash label's value", refused: "Changed: /metadata/labels/objectset.rio.cattle.io~1hash.",
					kubectl: in("label", "configmap", "settings", "objectset.rio.cattle.io/hash=mine", "--overwrite")},
				{what: "remove the hash label", refused: stripped, kubectl: in("label", "configmap", "settings", "objectset.rio.cattle.io/hash-")},
			},
		},
		chain{
			name: "CollectionDeletesAndPreconditions",
			steps: []step{
				{what: "DeleteCollection of the namespace's ConfigMaps", refused: deleting, do: func(ctx context.Context) error {
					return mallory.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(advFleetNS), client.MatchingLabels{"objectset.rio.cattle.io/hash": fleetMeta("").Labels["objectset.rio.cattle.io/hash"]})
				}},
				{what: "kubectl delete --all", refused: deleting, kubectl: in("delete", "configmaps,services", "--all", "--wait=false")},
				{what: "DELETE with a uid precondition", refused: deleting, do: func(ctx context.Context) error {
					cm := &corev1.ConfigMap{}
					if err := mallory.Get(ctx, client.ObjectKey{Namespace: advFleetNS, Name: "settings"}, cm); err != nil {
						return err
					}
					return mallory.Delete(ctx, cm, client.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion})
				}},
				{what: "delete the Fleet-managed namespace", refused: deleting, kubectl: []string{"delete", "namespace", advFleetNS + "-owned", "--wait=false"}},
			},
		},
		chain{
			name: "BookkeepingTheRuleLeavesAlone",
			steps: []step{
				{what: "add a finalizer", allowed: "finalizers are cleanup bookkeeping; one added only delays a delete Fleet asked for",
					kubectl: in("patch", "configmap", "settings", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)},
				{what: "remove it", allowed: "clearing a stuck finalizer must work",
					kubectl: in("patch", "configmap", "settings", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)},
				{what: "rewrite managedFields", allowed: "managedFields record who wrote what; rewriting them changes nothing the object does",
					kubectl: in("patch", "configmap", "settings", "--type=json", "-p", `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`)},
				{what: "create an object with Fleet's label and an owner-gvk annotation", allowed: "objects applied with an owner belong to Rancher's and Fleet's controllers, not to a bundle; one made by hand changes no deployed object",
					do: func(ctx context.Context) error {
						meta := fleetMeta("look-alike")
						meta.Namespace = advFleetNS
						meta.Annotations["objectset.rio.cattle.io/owner-gvk"] = "v1, Kind=Namespace"
						return mallory.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta})
					}},
			},
		},
	)
	runChains(ctx, t, chains)

	t.Run("TheDeployedObjectsAreUnchanged", func(t *testing.T) {
		out, _, err := env.Kubectl(ctx, "", "-n", advFleetNS, "get", "deploy,svc,pvc,sts,ds,cronjob,ingress,pdb,pod,rc,configmap,gitrepository", "-l", "objectset.rio.cattle.io/hash", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		// The bundle's 12 objects and the look-alike ConfigMap; bait is
		// unlabelled.
		if got := len(strings.Fields(out)); got != 13 {
			t.Errorf("%d labelled objects remain, want 13:\n%s", got, out)
		}
	})
}

// addOwner makes ConfigMap owner an owner of Deployment web, through the
// object or its status subresource.
func addOwner(ctx context.Context, c client.Client, owner string, status bool) error {
	return addOwnerIn(ctx, c, advFleetNS, "web", owner, status)
}
