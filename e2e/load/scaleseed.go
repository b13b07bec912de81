package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/e2e/harness"
)

// Real provider-sql MR kinds (legacy cluster-scoped group) the scale
// scenarios compose: Database and Role, installed in every environment,
// and Grant and Schema, from e2e/upstream/provider-sql-scale.
var (
	sqlGroup    = "postgresql.sql.crossplane.io"
	databaseGVR = schema.GroupVersionResource{Group: sqlGroup, Version: "v1alpha1", Resource: "databases"}
	roleGVR     = schema.GroupVersionResource{Group: sqlGroup, Version: "v1alpha1", Resource: "roles"}
	grantGVR    = schema.GroupVersionResource{Group: sqlGroup, Version: "v1alpha1", Resource: "grants"}
	schemaGVR   = schema.GroupVersionResource{Group: sqlGroup, Version: "v1alpha1", Resource: "schemas"}
)

// installScaleCRDs creates the CRDs of e2e/upstream/provider-sql-scale
// and waits until they are served.
func installScaleCRDs(ctx context.Context, env *harness.Env) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "e2e", "upstream", "provider-sql-scale")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", dir)
	}
	return installCRDFiles(ctx, env, files)
}

// installPolicyReportCRDs creates the PolicyReport CRDs Steward ships
// (manifests/policyreport-crds), so the background audit publishes as in
// a cluster that has them.
func installPolicyReportCRDs(ctx context.Context, env *harness.Env) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "manifests", "policyreport-crds")
	return installCRDFiles(ctx, env, []string{filepath.Join(dir, "policyreports.yaml"), filepath.Join(dir, "clusterpolicyreports.yaml")})
}

// installCRDFiles creates the CRD of each file and waits until they are
// served.
func installCRDFiles(ctx context.Context, env *harness.Env, files []string) error {
	var names []string
	for _, f := range files {
		crd, err := readCRD(f)
		if err != nil {
			return err
		}
		if err := env.Client.Create(ctx, crd); err != nil {
			return fmt.Errorf("installing %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	return waitEstablished(ctx, env, names)
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// waitEstablished waits until every named CRD is Established.
func waitEstablished(ctx context.Context, env *harness.Env, names []string) error {
	return harness.Poll(ctx, 10*time.Minute, func() error {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}
			if !established {
				return fmt.Errorf("CRD %s is not established yet", name)
			}
		}
		return nil
	})
}

// seedStep is one growth of the mix: how many objects it added and how
// long that took.
type seedStep struct {
	Total, Added int
	Took         time.Duration
}

func (s seedStep) rate() float64 { return float64(s.Added) / max(s.Took.Seconds(), 1e-9) }

// mixSeeder grows the Crossplane and Flux mix in place: for every
// composite resource (a v1 XPostgreSQLInstance of a claim) five composed
// MRs of real provider-sql kinds (a Database, a Role, a Schema and two
// Grants: every kind once, and one kind several times), and a Flux object
// for every other XR.
type mixSeeder struct {
	dyn            dynamic.Interface
	workers        int
	xrs, mrs, flux int
}

// mrsPerXR is the mix's 1 XR : 5 MRs; fluxEvery its ½ Flux object per XR.
const mrsPerXR, fluxEvery = 5, 2

func (m *mixSeeder) total() int { return m.xrs + m.mrs + m.flux }

// mixFor splits total objects into the mix: 2 XRs to 10 MRs to 1 Flux
// object in 13.
func mixFor(total int) (xrs, flux int) {
	xrs = total * fluxEvery / (fluxEvery*(1+mrsPerXR) + 1)
	return xrs, total - xrs*(1+mrsPerXR)
}

// growTo creates objects until the mix holds total, writing straight to
// the API server from many goroutines.
func (m *mixSeeder) growTo(ctx context.Context, total int) (seedStep, error) {
	start, before := time.Now(), m.total()
	xrs, flux := mixFor(total)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(m.workers)
	for i := m.xrs; i < xrs; i++ {
		g.Go(func() error { return seedComposite(gctx, m.dyn, i) })
	}
	for i := m.flux; i < flux; i++ {
		g.Go(func() error { return seedFlux(gctx, m.dyn, i) })
	}
	if err := g.Wait(); err != nil {
		return seedStep{}, err
	}
	m.xrs, m.mrs, m.flux = max(m.xrs, xrs), max(m.xrs, xrs)*mrsPerXR, max(m.flux, flux)
	return seedStep{Total: m.total(), Added: m.total() - before, Took: time.Since(start)}, nil
}

// composedKinds are the five MRs of each XR: resource, kind, and the name
// of the composition step that made it.
var composedKinds = []struct {
	gvr        schema.GroupVersionResource
	kind, step string
}{
	{databaseGVR, "Database", "database"},
	{roleGVR, "Role", "owner-role"},
	{schemaGVR, "Schema", "app-schema"},
	{grantGVR, "Grant", "grant-connect"},
	{grantGVR, "Grant", "grant-usage"},
}

// seedComposite creates the i-th XR and, owned by it, its five MRs.
func seedComposite(ctx context.Context, dyn dynamic.Interface, i int) error {
	claimName := fmt.Sprintf("scale-%06d", i)
	xrName := claimName + "-" + suffix(i)
	names := make([]string, len(composedKinds))
	refs := make([]any, len(composedKinds))
	for j, k := range composedKinds {
		names[j] = fmt.Sprintf("%s-%s", xrName, suffix(i*7+j))
		refs[j] = map[string]any{"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind, "name": names[j]}
	}
	xr := composite(xrName, claimName, nil)
	_ = unstructured.SetNestedSlice(xr.Object, refs, "spec", "resourceRefs")
	got, err := createRetry(ctx, dyn.Resource(compositeGVR), xr)
	if err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: got.GetAPIVersion(), Kind: got.GetKind(), Name: got.GetName(), UID: got.GetUID(),
		Controller: ptr(true), BlockOwnerDeletion: ptr(true)}
	for j, k := range composedKinds {
		mr := composedMR(k.kind, names[j], xrName, claimName, k.step)
		mr.SetOwnerReferences([]metav1.OwnerReference{owner})
		if _, err := createRetry(ctx, dyn.Resource(k.gvr), mr); err != nil {
			return err
		}
	}
	return nil
}

// composedMR is an MR as Crossplane composes it and its provider has
// adopted it: the composite's labels, the composition step, the external
// name, and the provider's finalizer.
func composedMR(kind, name, xr, claimName, step string) *unstructured.Unstructured {
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
	mr := unstructuredObj(sqlGroup+"/v1alpha1", kind, "", name,
		map[string]string{"crossplane.io/composite": xr, "crossplane.io/claim-name": claimName, "crossplane.io/claim-namespace": claimsNamespace},
		map[string]string{"crossplane.io/external-name": name, "crossplane.io/composition-resource-name": step}, spec)
	mr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	return mr
}

// seedFlux creates the i-th Flux object of the mix: half Kustomizations,
// then HelmReleases and GitRepositories, a quarter of them suspended.
func seedFlux(ctx context.Context, dyn dynamic.Interface, i int) error {
	kind, res := "Kustomization", ksGVR
	switch i % 4 {
	case 1:
		kind, res = "HelmRelease", hrGVR
	case 3:
		kind, res = "GitRepository", gitRepoGVR
	}
	_, err := createRetry(ctx, dyn.Resource(res).Namespace(fluxNamespace), fluxObject(kind, fmt.Sprintf("scale-%s-%06d", strings.ToLower(kind), i), i%4 == 2))
	return err
}

// seedKinds creates n MR kinds, copies of provider-sql's Database CRD
// renamed (kind DatabaseNNN in group kNNN.scale.sql.crossplane.io, still
// in the "managed" category), and perKind composed objects of each; it
// returns how many objects it created.
func seedKinds(ctx context.Context, env *harness.Env, dyn dynamic.Interface, n, perKind, workers int) (int, error) {
	root, err := harness.RepoRoot()
	if err != nil {
		return 0, err
	}
	base, err := readCRD(filepath.Join(root, "e2e", "upstream", "provider-sql", sqlGroup+"_databases.yaml"))
	if err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(min(workers, 8)) // each new CRD makes the API server rebuild its OpenAPI
	crds := make([]*apiextensionsv1.CustomResourceDefinition, n)
	var names []string
	for i := range crds {
		crds[i] = renamedCRD(base, i)
		names = append(names, crds[i].Name)
		g.Go(func() error {
			if err := env.Client.Create(gctx, crds[i]); err != nil {
				return fmt.Errorf("creating CRD %s: %w", crds[i].Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if err := waitEstablished(ctx, env, names); err != nil {
		return 0, err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, crd := range crds {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
		for j := range perKind {
			g.Go(func() error {
				xr := fmt.Sprintf("kinds-%03d-%s", i, suffix(i))
				mr := composedMR("Database", fmt.Sprintf("%s-%s", xr, suffix(i*31+j)), xr, fmt.Sprintf("kinds-%03d", i), "database")
				mr.SetAPIVersion(gvr.GroupVersion().String())
				mr.SetKind(crd.Spec.Names.Kind)
				_, err := createRetry(gctx, dyn.Resource(gvr), mr)
				return err
			})
		}
	}
	return n * perKind, g.Wait()
}

// renamedCRD is base with kind DatabaseNNN in group kNNN.scale.sql.crossplane.io.
func renamedCRD(base *apiextensionsv1.CustomResourceDefinition, i int) *apiextensionsv1.CustomResourceDefinition {
	crd := base.DeepCopy()
	crd.ObjectMeta = metav1.ObjectMeta{Labels: map[string]string{benchLabel: scenarioKinds}}
	kind := fmt.Sprintf("Database%03d", i)
	crd.Spec.Group = fmt.Sprintf("k%03d.scale.sql.crossplane.io", i)
	crd.Spec.Names.Kind, crd.Spec.Names.ListKind = kind, kind+"List"
	crd.Spec.Names.Singular, crd.Spec.Names.Plural = strings.ToLower(kind), strings.ToLower(kind)+"s"
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	return crd
}

// removeKinds deletes the generated MR kinds (and so their objects) and
// waits until they are gone.
func removeKinds(ctx context.Context, env *harness.Env) error {
	sel := client.MatchingLabels{benchLabel: scenarioKinds}
	if err := env.Client.DeleteAllOf(ctx, &apiextensionsv1.CustomResourceDefinition{}, sel); err != nil {
		return fmt.Errorf("removing the generated MR kinds: %w", err)
	}
	return harness.Poll(ctx, 10*time.Minute, func() error {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := env.Client.List(ctx, list, sel); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d generated MR kinds still being removed", len(list.Items))
		}
		return nil
	})
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
// owner and hash, and objectset.rio.cattle.io/applied, wrangler's gzipped
// and base64-encoded copy of the applied object.
func fleetWorkload(i int) (*appsv1.Deployment, error) {
	release := fmt.Sprintf("shop-%04d", i)
	d := fleetDeployment(release + "-web")
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.Labels[benchLabel] = scenarioFleet
	d.Labels["objectset.rio.cattle.io/hash"] = fmt.Sprintf("%040x", uint64(i)*0x9e3779b97f4a7c15)
	d.Labels["app.kubernetes.io/instance"] = release
	d.Labels["helm.sh/chart"] = "web-1.42.0"
	d.Annotations = map[string]string{
		"objectset.rio.cattle.io/id":              "default-" + release,
		"objectset.rio.cattle.io/owner-gvk":       fleetOwnerGVK,
		"objectset.rio.cattle.io/owner-name":      release,
		"objectset.rio.cattle.io/owner-namespace": fleetOwnerNS,
		"meta.helm.sh/release-name":               release,
		"meta.helm.sh/release-namespace":          fleetNamespace,
	}
	applied, err := appliedAnnotation(d)
	if err != nil {
		return nil, err
	}
	d.Annotations["objectset.rio.cattle.io/applied"] = applied
	return d, nil
}

// appliedAnnotation is wrangler's record of the applied object: its JSON,
// gzipped, in base64.
func appliedAnnotation(obj runtime.Object) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// seedFleet creates n Fleet-managed Deployments as the Fleet agent, with
// its field manager, and reports their status as the deployment
// controller would, so each carries both managedFields entries.
func seedFleet(ctx context.Context, agent, admin kubernetes.Interface, n, workers int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error {
			d, err := fleetWorkload(i)
			if err != nil {
				return err
			}
			got, err := agent.AppsV1().Deployments(fleetNamespace).Create(gctx, d, metav1.CreateOptions{FieldManager: fleetFieldManager})
			if err != nil {
				return fmt.Errorf("creating Deployment %s: %w", d.Name, err)
			}
			replicas := *got.Spec.Replicas
			now := metav1.NewTime(time.Now())
			got.Status = appsv1.DeploymentStatus{
				ObservedGeneration: got.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", got.Name+"-7f9d8c6b5"), LastUpdateTime: now, LastTransitionTime: now},
				},
			}
			if _, err := admin.AppsV1().Deployments(fleetNamespace).UpdateStatus(gctx, got, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
				return fmt.Errorf("updating the status of Deployment %s: %w", d.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}
