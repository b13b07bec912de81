package manifests

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Document is one object of a built install, as YAML, and the file under
// manifests/ it comes from (for an object an overlay patches, the base's
// file that declares it).
type Document struct {
	Source string
	YAML   []byte
}

// Build returns the objects `kubectl kustomize manifests/overlays/<overlay>`
// prints for o, without kustomize: the base's objects, those the overlay
// patches patched as kustomize patches them (strategic merge), then the
// overlay's own, in kustomize's order (the Namespace first, the webhook
// configurations last). It is what `steward manifests --dir -` writes, for
// `kubectl apply -f -`.
func Build(o Options, overlay string) ([]Document, error) {
	parts, ok := overlayParts[overlay]
	if !ok {
		return nil, fmt.Errorf("no overlay %q: want one of %s", overlay, strings.Join(Overlays(), ", "))
	}
	in, cfg := o.install()
	objs := in.overlayObjects()
	var patches []any
	for _, p := range parts.patches {
		patches = append(patches, objs[overlayPath(overlay, p)]...)
	}
	type object struct {
		source string
		obj    map[string]any
	}
	var all []object
	base := in.baseObjects(cfg)
	for _, path := range sortedKeys(base) {
		for _, obj := range base[path] {
			m, err := toMap(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if m, err = patched(m, patches); err != nil {
				return nil, err
			}
			all = append(all, object{path, m})
		}
	}
	for _, r := range parts.resources {
		path := overlayPath(overlay, r)
		for _, obj := range objs[path] {
			m, err := toMap(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			all = append(all, object{path, m})
		}
	}
	slices.SortStableFunc(all, func(a, b object) int { return compareKustomizeOrder(a.obj, b.obj) })
	docs := make([]Document, 0, len(all))
	for _, o := range all {
		y, err := yaml.Marshal(o.obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.source, err)
		}
		docs = append(docs, Document{Source: o.source, YAML: y})
	}
	return docs, nil
}

// Stream writes documents as one multi-document YAML stream, each
// preceded by a comment naming its source, as `helm template` does.
func Stream(docs []Document) []byte {
	var b bytes.Buffer
	for _, d := range docs {
		fmt.Fprintf(&b, "---\n# Source: %s\n", d.Source)
		b.Write(d.YAML)
	}
	return b.Bytes()
}

// kindsFirst and kindsLast are kustomize's order of kinds in its output
// (sigs.k8s.io/kustomize/kyaml/resid, the default "legacy" order): what
// others depend on first, the webhook configurations last; other kinds in
// between.
var (
	kindsFirst = []string{"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
		"ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding",
		"ConfigMap", "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
		"PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget"}
	kindsLast = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
)

// kindRank places a kind in kustomize's order: negative for kindsFirst,
// positive for kindsLast, 0 for the others.
func kindRank(kind string) int {
	if i := slices.Index(kindsFirst, kind); i >= 0 {
		return i - len(kindsFirst)
	}
	if i := slices.Index(kindsLast, kind); i >= 0 {
		return i + 1
	}
	return 0
}

// compareKustomizeOrder orders objects as kustomize does: by kind rank,
// then group, version and kind, then namespace and name.
func compareKustomizeOrder(a, b map[string]any) int {
	key := func(m map[string]any) (int, string, string) {
		kind, _ := m["kind"].(string)
		apiVersion, _ := m["apiVersion"].(string)
		group, version, found := strings.Cut(apiVersion, "/")
		if !found {
			group, version = "~G", apiVersion
		}
		meta, _ := m["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		return kindRank(kind), group + "_" + version + "_" + kind, ns + "|" + name(m)
	}
	ra, ga, na := key(a)
	rb, gb, nb := key(b)
	switch {
	case ra != rb:
		return ra - rb
	case ga != gb:
		return strings.Compare(ga, gb)
	}
	return strings.Compare(na, nb)
}
