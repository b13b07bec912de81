package rulessync

import (
	"context"
	stdbase64 "encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/stewardhq/steward/webhooks/rule"
)

// FieldManager is the server-side apply field manager under which Steward
// keeps its registration: every field of its webhook entries that the
// configuration renders, except the caBundle (cert-manager's cainjector's,
// or the self-managed mode's) and the rules of entries with DynamicRules
// (each rule's own manager, rule.FieldManager).
const FieldManager = "steward"

// restoreManager writes, as an ordinary update, what Steward puts back
// that is not its own: the caBundle, labels and annotations of a
// configuration it re-creates, and the caBundle of an entry it put back.
// Being an update, not an apply, it never removes a field by leaving it
// out, and cainjector's next write simply takes the caBundle over.
const restoreManager = "steward-restore"

// recreateAfter is how long a deleted configuration stays deleted before
// Steward re-creates it. An uninstall (helm uninstall, kubectl delete -k)
// deletes Steward's Deployment or namespace in the same pass as its
// configurations; waiting this long lets Steward see that first, in
// whichever order the installer deletes.
const recreateAfter = 3 * time.Second

// Registration says which webhook configurations Steward keeps and where
// their entries send requests.
type Registration struct {
	// Validating and Mutating name Steward's two configurations.
	Validating, Mutating string
	// Target is where the entries send requests (a Service in Steward's
	// namespace, or a URL).
	Target rule.Target
	// CAFile seeds the caBundle of a configuration Steward re-creates when
	// it has seen none (cert-manager's ca.crt in the mounted Secret, or
	// the self-managed mode's). Empty: none is seeded.
	CAFile string
	// Deployment names Steward's Deployment in Target.Namespace: once seen,
	// its deletion means Steward is being uninstalled.
	Deployment string
	// Overrides are what the installer changed in the entries (the Helm
	// chart's webhooks value), by entry name: Steward keeps them.
	Overrides map[string]Override
	// ShuttingDown reports that this replica is shutting down; it then
	// re-creates no deleted configuration, so a Pod terminating because of
	// an uninstall never writes one back. It still repairs entries until
	// it stops, and hands the Lease over when it does, so a rolling
	// update leaves no moment without a keeper.
	ShuttingDown func() bool
}

// configuration is one of Steward's two webhook configurations as the
// keeper handles it: in unstructured form, so that one code path serves
// both kinds.
type configuration struct {
	kind string
	name string
	// render returns the body of the apply: the entries Steward owns.
	render func() map[string]any
	// apply, create and patch write through the typed client and return
	// the object the API server stored.
	get    func(ctx context.Context) (map[string]any, error)
	apply  func(ctx context.Context, body []byte) (map[string]any, error)
	create func(ctx context.Context, obj map[string]any) (map[string]any, error)
	patch  func(ctx context.Context, jsonPatch []byte) (map[string]any, error)

	// seen is the object as it last was after a sync (nil before the
	// first); goneSince is when it was first found missing.
	seen      map[string]any
	goneSince time.Time
	// stale is set when what Steward renders changed (a reloaded
	// configuration): the next sync applies whatever the live object is.
	stale atomic.Bool
}

// keeper keeps Steward's two webhook configurations equal to what its
// configuration renders.
type keeper struct {
	reg     Registration
	log     logr.Logger
	report  *Reports
	configs []*configuration
	now     func() time.Time

	mu    sync.Mutex
	specs []rule.Spec

	// uninstalling is set once Steward's namespace or Deployment is being
	// deleted; stopped is logged once.
	uninstalling func() (bool, string)
	stopped      string
	// retry asks for another sync after d (a deleted configuration
	// waiting out recreateAfter).
	retry func(d time.Duration)
}

func newKeeper(kube kubernetes.Interface, specs []rule.Spec, reg Registration, report *Reports, log logr.Logger) *keeper {
	k := &keeper{reg: reg, log: log.WithName("registration"), report: report, specs: specs, now: time.Now,
		uninstalling: func() (bool, string) { return false, "" }, retry: func(time.Duration) {}}
	api := kube.AdmissionregistrationV1()
	if reg.Validating != "" {
		k.configs = append(k.configs, configurationOf(k, "ValidatingWebhookConfiguration", rule.Validating, reg.Validating,
			api.ValidatingWebhookConfigurations(), func() *admissionregistrationv1.ValidatingWebhookConfiguration {
				return &admissionregistrationv1.ValidatingWebhookConfiguration{}
			}))
	}
	if reg.Mutating != "" {
		k.configs = append(k.configs, configurationOf(k, "MutatingWebhookConfiguration", rule.Mutating, reg.Mutating,
			api.MutatingWebhookConfigurations(), func() *admissionregistrationv1.MutatingWebhookConfiguration {
				return &admissionregistrationv1.MutatingWebhookConfiguration{}
			}))
	}
	for _, c := range k.configs {
		if body := c.render(); body != nil {
			report.known(c.kind, c.name, entryNames(body))
		}
	}
	return k
}

// toMap turns what a typed client returned into its unstructured form.
// configClient is the typed client of one kind of webhook configuration,
// as client-go serves both.
type configClient[T runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// configurationOf is the keeper's hold on the configuration name of the
// given kind, through its typed client c; empty makes an object of it.
func configurationOf[T runtime.Object](k *keeper, kind string, which rule.Type, name string, c configClient[T], empty func() T) *configuration {
	apply := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
	restore := metav1.PatchOptions{FieldManager: restoreManager}
	return &configuration{
		kind: kind, name: name,
		render: func() map[string]any { return k.render(which, name) },
		get: func(ctx context.Context) (map[string]any, error) {
			return toMap(c.Get(ctx, name, metav1.GetOptions{}))
		},
		apply: func(ctx context.Context, body []byte) (map[string]any, error) {
			return toMap(c.Patch(ctx, name, types.ApplyPatchType, body, apply))
		},
		create: func(ctx context.Context, obj map[string]any) (map[string]any, error) {
			typed := empty()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
				return nil, err
			}
			return toMap(c.Create(ctx, typed, metav1.CreateOptions{FieldManager: restoreManager}))
		},
		patch: func(ctx context.Context, p []byte) (map[string]any, error) {
			return toMap(c.Patch(ctx, name, types.JSONPatchType, p, restore))
		},
	}
}

func toMap[T runtime.Object](obj T, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// SetSpecs makes the keeper keep what specs render from now on (a
// reloaded configuration).
func (k *keeper) setSpecs(specs []rule.Spec) {
	k.mu.Lock()
	k.specs = specs
	k.mu.Unlock()
	for _, c := range k.configs {
		c.stale.Store(true)
	}
}

// render is the apply body of the configuration of type typ named name:
// every entry of that type, rendered as `steward manifests` renders it,
// without the caBundle and, for entries with DynamicRules, without rules.
// It returns nil when no rule has an entry of that type.
func (k *keeper) render(typ rule.Type, name string) map[string]any {
	k.mu.Lock()
	specs := k.specs
	k.mu.Unlock()
	var entries []any
	for _, spec := range specs {
		if spec.Type != typ {
			continue
		}
		for _, wh := range spec.Webhooks {
			var entry any
			o := k.reg.Overrides[wh.Name]
			if typ == rule.Mutating {
				e := wh.MutatingWebhook(k.reg.Target)
				if wh.DynamicRules != nil {
					e.Rules = nil
				}
				o.apply(&e.FailurePolicy, &e.TimeoutSeconds, &e.NamespaceSelector, &e.ObjectSelector)
				entry = &e
			} else {
				e := wh.ValidatingWebhook(k.reg.Target)
				if wh.DynamicRules != nil {
					e.Rules = nil
				}
				o.apply(&e.FailurePolicy, &e.TimeoutSeconds, &e.NamespaceSelector, &e.ObjectSelector)
				entry = &e
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(entry)
			if err != nil { // the entries are plain data; cannot happen
				k.log.Error(err, "rendering a webhook entry", "entry", wh.Name)
				continue
			}
			entries = append(entries, m)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       typ.ConfigurationKind(),
		"metadata":   map[string]any{"name": name},
		"webhooks":   entries,
	}
}

// sync brings one configuration back to what Steward renders. live is the
// object the watch holds (nil when it does not exist).
func (k *keeper) sync(ctx context.Context, c *configuration, live map[string]any) error {
	if stop, why := k.uninstalling(); stop {
		if k.stopped != why {
			k.stopped = why
			k.log.Info("Steward is being uninstalled: its webhook configurations are no longer kept", "reason", why)
		}
		return nil
	}
	body := c.render()
	if body == nil {
		return nil
	}
	if live == nil {
		return k.recreate(ctx, c, body)
	}
	c.goneSince = time.Time{}
	owned := entryNames(body)
	var found *Repair
	if c.seen != nil && !c.stale.Load() && uidOf(c.seen) == uidOf(live) {
		// Steward wrote this configuration before: a version the watch
		// delivers that is not newer than that write has nothing new, and
		// a newer one is put back only if it differs from that write in
		// Steward's fields. So Steward never applies from a stale view,
		// and what it reports is exactly what changed.
		if generationOf(live) <= generationOf(c.seen) {
			return nil
		}
		found = diffOwned(c, live, c.seen, owned, k.dynamicEntries())
		if found == nil {
			c.seen = live // someone else's fields (a caBundle) changed
			return nil
		}
	}
	data, err := jsonMarshal(body)
	if err != nil {
		return err
	}
	applied, err := c.apply(ctx, data)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: the watch tells
		}
		return fmt.Errorf("applying %s %s: %w", c.kind, c.name, err)
	}
	if applied, err = k.fillCABundles(ctx, c, applied); err != nil {
		return err
	}
	switch {
	case c.stale.Load() && c.seen != nil:
		// What Steward renders changed (a reloaded configuration): that
		// is Steward's own change, not one it put back.
		if generationOf(applied) != generationOf(live) {
			k.log.Info("applied the webhook configuration the reloaded configuration renders", "configuration", c.kind+"/"+c.name)
		}
	case found == nil:
		// The first write: what it changed is what the live object lacked.
		found = repairOf(c, live, applied, owned)
	}
	if found != nil {
		found.ChangedBy = changedBy(c.seen, live, found.Entries)
		found.UID, found.ResourceVersion = uidOf(applied), resourceVersionOf(applied)
		k.report.repaired(*found)
	}
	c.seen = applied
	c.stale.Store(false)
	return nil
}

// dynamicEntries names the entries whose rules follow the cluster: their
// rules are their rule's manager's, never a change to put back.
func (k *keeper) dynamicEntries() map[string]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]bool{}
	for _, spec := range k.specs {
		for _, wh := range spec.Webhooks {
			if wh.DynamicRules != nil {
				out[wh.Name] = true
			}
		}
	}
	return out
}

// diffOwned tells how live differs from what Steward last wrote (seen)
// in the entries Steward owns: nil when it does not.
func diffOwned(c *configuration, live, seen map[string]any, owned []string, dynamic map[string]bool) *Repair {
	is, was := entriesOf(live), entriesOf(seen)
	r := &Repair{Kind: c.kind, Configuration: c.name, Fields: map[string][]string{}}
	for _, name := range owned {
		var fields []string
		if is[name] == nil {
			fields = []string{"(entry)"}
		} else {
			fields = slices.DeleteFunc(changedFields(was[name], is[name]), func(f string) bool { return f == "rules" && dynamic[name] })
		}
		if len(fields) > 0 {
			r.Entries = append(r.Entries, name)
			r.Fields[name] = fields
		}
	}
	if len(r.Entries) == 0 {
		return nil
	}
	return r
}

// recreate puts back a deleted configuration once it has stayed deleted
// for recreateAfter: the rendered entries, and from the object last seen
// its labels, annotations and caBundles (or, never having seen it, the
// CA in CAFile), so the API server can call Steward at once and an
// installer still recognises the object as its own.
func (k *keeper) recreate(ctx context.Context, c *configuration, body map[string]any) error {
	if k.reg.ShuttingDown != nil && k.reg.ShuttingDown() {
		return nil
	}
	now := k.now()
	if c.goneSince.IsZero() {
		c.goneSince = now
	}
	if wait := recreateAfter - now.Sub(c.goneSince); wait > 0 {
		k.retry(wait)
		return nil
	}
	obj := restoredObject(body, c.seen, k.caFromFile())
	created, err := c.create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return nil // re-created meanwhile: the watch tells
	}
	if err != nil {
		return fmt.Errorf("re-creating %s %s: %w", c.kind, c.name, err)
	}
	data, err := jsonMarshal(body)
	if err != nil {
		return err
	}
	// The apply makes Steward's manager own its fields, as on any other
	// configuration it keeps.
	applied, err := c.apply(ctx, data)
	if err != nil {
		applied = created
		k.log.Error(err, "applying a re-created configuration", "configuration", c.kind+"/"+c.name)
	}
	c.goneSince = time.Time{}
	k.report.repaired(Repair{Kind: c.kind, Configuration: c.name, Deleted: true, Entries: entryNames(body),
		UID: uidOf(applied), ResourceVersion: resourceVersionOf(applied)})
	c.seen = applied
	return nil
}

func (k *keeper) caFromFile() []byte {
	if k.reg.CAFile == "" {
		return nil
	}
	data, err := os.ReadFile(k.reg.CAFile)
	if err != nil {
		k.log.Info("no CA to seed the caBundle of a re-created configuration with; its injector must fill it", "file", k.reg.CAFile, "error", err.Error())
		return nil
	}
	return data
}

// restoredObject is the object to create for a deleted configuration:
// the rendered body, with labels, annotations and each entry's caBundle
// from the object last seen (seen may be nil), an entry seen without one
// getting another entry's (every entry is served by the same
// certificate), or ca.
func restoredObject(body, seen map[string]any, ca []byte) map[string]any {
	obj := runtime.DeepCopyJSON(body)
	meta := obj["metadata"].(map[string]any)
	bundles := map[string]string{}
	var any1 string
	if seen != nil {
		for _, key := range []string{"labels", "annotations"} {
			if v, ok, _ := unstructured.NestedMap(seen, "metadata", key); ok {
				meta[key] = v
			}
		}
		for name, e := range entriesOf(seen) {
			if b, ok, _ := unstructured.NestedString(e, "clientConfig", "caBundle"); ok && b != "" {
				bundles[name] = b
				any1 = b
			}
		}
	}
	if any1 == "" && len(ca) > 0 {
		any1 = base64(ca)
	}
	for _, e := range obj["webhooks"].([]any) {
		entry := e.(map[string]any)
		name, _ := entry["name"].(string)
		b := bundles[name]
		if b == "" {
			b = any1
		}
		if b != "" {
			_ = unstructured.SetNestedField(entry, b, "clientConfig", "caBundle")
		}
	}
	return obj
}

// fillCABundles gives an entry Steward put back without a caBundle the
// caBundle of the configuration's other entries, under restoreManager:
// every entry is served by the same certificate, and an entry without
// one could not be called until an injector noticed.
func (k *keeper) fillCABundles(ctx context.Context, c *configuration, obj map[string]any) (map[string]any, error) {
	list, _, _ := unstructured.NestedSlice(obj, "webhooks")
	var bundle string
	var missing []int
	for i, e := range list {
		b, _, _ := unstructured.NestedString(e.(map[string]any), "clientConfig", "caBundle")
		if b == "" {
			missing = append(missing, i)
		} else if bundle == "" {
			bundle = b
		}
	}
	if len(missing) == 0 || bundle == "" {
		return obj, nil
	}
	var ops []map[string]any
	for _, i := range missing {
		name, _, _ := unstructured.NestedString(list[i].(map[string]any), "name")
		path := fmt.Sprintf("/webhooks/%d", i)
		ops = append(ops,
			map[string]any{"op": "test", "path": path + "/name", "value": name},
			map[string]any{"op": "add", "path": path + "/clientConfig/caBundle", "value": bundle})
	}
	data, err := jsonMarshal(ops)
	if err != nil {
		return obj, err
	}
	patched, err := c.patch(ctx, data)
	if err != nil {
		return obj, fmt.Errorf("filling the caBundle of entries put back into %s %s: %w", c.kind, c.name, err)
	}
	return patched, nil
}

func generationOf(obj map[string]any) int64 {
	g, _, _ := unstructured.NestedInt64(obj, "metadata", "generation")
	return g
}

func resourceVersionOf(obj map[string]any) string {
	v, _, _ := unstructured.NestedString(obj, "metadata", "resourceVersion")
	return v
}

func uidOf(obj map[string]any) string {
	u, _, _ := unstructured.NestedString(obj, "metadata", "uid")
	return u
}

// entriesOf returns a configuration's entries by name.
func entriesOf(obj map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _, _ := unstructured.NestedSlice(obj, "webhooks")
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if name, ok := m["name"].(string); ok {
			out[name] = m
		}
	}
	return out
}

// entryNames lists the names of a rendered body's entries, in order.
func entryNames(body map[string]any) []string {
	var out []string
	for _, e := range body["webhooks"].([]any) {
		out = append(out, e.(map[string]any)["name"].(string))
	}
	return out
}

// repairOf tells what an apply changed: nil when it changed no entry
// (the generation, which the API server bumps on any change of the
// entries, stayed), else the entries Steward owns whose fields, the
// caBundle aside, differ between before and after, with those fields.
func repairOf(c *configuration, before, after map[string]any, owned []string) *Repair {
	if generationOf(before) == generationOf(after) {
		return nil
	}
	was, is := entriesOf(before), entriesOf(after)
	r := &Repair{Kind: c.kind, Configuration: c.name, Fields: map[string][]string{}}
	for _, name := range owned {
		fields := changedFields(was[name], is[name])
		if len(fields) == 0 {
			continue
		}
		r.Entries = append(r.Entries, name)
		r.Fields[name] = fields
	}
	if len(r.Entries) == 0 {
		return nil
	}
	return r
}

// changedFields lists the top-level fields of an entry that differ,
// caBundle aside; a missing entry is "(entry)".
func changedFields(was, is map[string]any) []string {
	if was == nil {
		return []string{"(entry)"}
	}
	strip := func(m map[string]any) map[string]any {
		m = runtime.DeepCopyJSON(m)
		unstructured.RemoveNestedField(m, "clientConfig", "caBundle")
		return m
	}
	was, is = strip(was), strip(is)
	var out []string
	for key := range is {
		if !equality.Semantic.DeepEqual(was[key], is[key]) {
			out = append(out, key)
		}
	}
	for key := range was {
		if _, ok := is[key]; !ok {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

func jsonMarshal(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding an apply of Steward's registration: %w", err)
	}
	return data, nil
}

func base64(data []byte) string { return stdbase64.StdEncoding.EncodeToString(data) }
