package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// namespace is where the writes go: a namespace no entry excludes.
const namespace = "shop"

// matcher is the API server's webhook matching: the generic webhook
// plugin with a namespace lister that knows the namespace, and an
// authorizer (match conditions get `authorizer` bound, as in the server).
type matcher struct {
	plugin *generic.Webhook
	o      admission.ObjectInterfaces
}

func newMatcher() (*matcher, error) {
	noDispatcher := func(*webhookutil.ClientManager) generic.Dispatcher { return nil }
	plugin, err := generic.NewWebhook(admission.NewHandler(admission.Create, admission.Update, admission.Delete), nil, nil, noDispatcher)
	if err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{corev1.LabelMetadataName: namespace}}}
	if err := f.Core().V1().Namespaces().Informer().GetIndexer().Add(ns); err != nil {
		return nil, err
	}
	plugin.SetExternalKubeInformerFactory(f)
	plugin.SetUnconditionalAuthorizer(allowAll{})
	return &matcher{plugin: plugin, o: admission.NewObjectInterfacesFromScheme(scheme.Scheme)}, nil
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// writeKind is a write no GitOps tool marks: Steward must not be called.
type writeKind struct {
	name  string
	attrs func() admission.Attributes
}

var (
	person   = &user.DefaultInfo{Name: "jane@example.com", Groups: []string{"developers", user.AllAuthenticated}}
	operator = &user.DefaultInfo{Name: "system:serviceaccount:shop:operator", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:shop", user.AllAuthenticated}}
	kubelet  = &user.DefaultInfo{Name: "system:node:worker-1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
)

func writeKinds() []writeKind {
	cmKind, cmResource := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps")
	podKind, podResource := corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods")
	cm := func(level string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: namespace, Labels: map[string]string{"app": "shop"}},
			Data:       map[string]string{"LOG_LEVEL": level},
		}
	}
	pod := func(phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: namespace, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-12-01T00:00:00Z"}},
			Spec:       corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/shop/web:1.42"}}},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	return []writeKind{
		{"a person creates a ConfigMap", func() admission.Attributes {
			return admission.NewAttributesRecord(cm("info"), nil, cmKind, namespace, "settings", cmResource, "", admission.Create, &metav1.CreateOptions{}, false, person)
		}},
		{"a person updates a ConfigMap", func() admission.Attributes {
			return admission.NewAttributesRecord(cm("debug"), cm("info"), cmKind, namespace, "settings", cmResource, "", admission.Update, &metav1.UpdateOptions{}, false, person)
		}},
		{"an operator updates a ConfigMap", func() admission.Attributes {
			return admission.NewAttributesRecord(cm("debug"), cm("info"), cmKind, namespace, "settings", cmResource, "", admission.Update, &metav1.UpdateOptions{}, false, operator)
		}},
		{"a person deletes a ConfigMap", func() admission.Attributes {
			return admission.NewAttributesRecord(nil, cm("info"), cmKind, namespace, "settings", cmResource, "", admission.Delete, &metav1.DeleteOptions{}, false, person)
		}},
		{"a kubelet updates a Pod's status", func() admission.Attributes {
			return admission.NewAttributesRecord(pod(corev1.PodRunning), pod(corev1.PodPending), podKind, namespace, "web-0", podResource, "status", admission.Update, &metav1.UpdateOptions{}, false, kubelet)
		}},
	}
}

// versioned converts a write's objects once, for every entry, as the
// API server's dispatchers do.
type versioned struct {
	attr admission.Attributes
	o    admission.ObjectInterfaces
	v    *admission.VersionedAttributes
}

func (v *versioned) VersionedAttribute(gvk schema.GroupVersionKind) (*admission.VersionedAttributes, error) {
	if v.v != nil && v.v.VersionedKind == gvk {
		return v.v, nil
	}
	va, err := admission.NewVersionedAttributes(v.attr, gvk, v.o)
	v.v = va
	return va, err
}

// decide runs every entry's ShouldCallHook for one write, as the API
// server's dispatcher does, and fails if any entry would call Steward.
func (m *matcher) decide(ctx context.Context, w writeKind, hooks []webhook.WebhookAccessor) error {
	attr := w.attrs()
	v := &versioned{attr: attr, o: m.o}
	for _, h := range hooks {
		invocation, err := m.plugin.ShouldCallHook(ctx, h, attr, m.o, v)
		if err != nil {
			return fmt.Errorf("%s: %w", h.GetName(), err)
		}
		if invocation != nil {
			return fmt.Errorf("%s would call Steward", h.GetName())
		}
	}
	return nil
}

// reachingConditions counts the entries whose match conditions run for
// the write: those its namespace selector, object selector and rules let
// through (the same entry without conditions would be called).
func (m *matcher) reachingConditions(w writeKind, hooks []webhook.WebhookAccessor) int {
	n := 0
	for _, h := range hooks {
		if len(h.GetMatchConditions()) == 0 {
			continue
		}
		bare := withoutConditions(h)
		attr := w.attrs()
		if inv, err := m.plugin.ShouldCallHook(context.Background(), bare, attr, m.o, &versioned{attr: attr, o: m.o}); err == nil && inv != nil {
			n++
		}
	}
	return n
}

func withoutConditions(h webhook.WebhookAccessor) webhook.WebhookAccessor {
	if v, ok := h.GetValidatingWebhook(); ok {
		c := v.DeepCopy()
		c.MatchConditions = nil
		return webhook.NewValidatingWebhookAccessor(h.GetUID()+"-bare", h.GetConfigurationName(), c)
	}
	mw, _ := h.GetMutatingWebhook()
	c := mw.DeepCopy()
	c.MatchConditions = nil
	return webhook.NewMutatingWebhookAccessor(h.GetUID()+"-bare", h.GetConfigurationName(), c)
}

// results are one write's measurements: per configuration and round, the
// CPU time per write.
type results struct {
	perWrite [][]time.Duration
	// allocated is what each configuration allocates per write beyond
	// the first (no registrations), in bytes: garbage the API server's
	// collector then works through.
	allocated []uint64
}

// measure times the write under each configuration, rounds times, in
// alternating order (forward, then backward) so that drift favours none.
// Time is the process's CPU time (user and system, the collector's
// included): other processes on the machine do not count.
func (m *matcher) measure(w writeKind, configs []configuration, rounds, writes int) (*results, error) {
	ctx := context.Background()
	for _, c := range configs { // warm up, and check nothing would be called
		for range 1000 {
			if err := m.decide(ctx, w, c.hooks); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	r := &results{perWrite: make([][]time.Duration, len(configs))}
	order := make([]int, len(configs))
	for i := range order {
		order[i] = i
	}
	for round := range rounds {
		runtime.GC()
		for _, i := range order {
			start := cpuTime()
			for range writes {
				if err := m.decide(ctx, w, configs[i].hooks); err != nil {
					return nil, err
				}
			}
			r.perWrite[i] = append(r.perWrite[i], (cpuTime()-start)/time.Duration(writes))
		}
		if round%2 == 0 {
			slices.Reverse(order)
		}
	}
	floor := allocatedPerWrite(func() { _ = m.decide(ctx, w, configs[0].hooks) })
	for _, c := range configs {
		r.allocated = append(r.allocated, allocatedPerWrite(func() { _ = m.decide(ctx, w, c.hooks) })-floor)
	}
	return r, nil
}

func allocatedPerWrite(f func()) uint64 {
	const n = 2000
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / n
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cell is configuration i's median time per write, with the range.
func (r *results) cell(i int) string {
	xs := slices.Clone(r.perWrite[i])
	slices.Sort(xs)
	return fmt.Sprintf("%.1f (%.1f–%.1f)", micros(xs[len(xs)/2]), micros(xs[0]), micros(xs[len(xs)-1]))
}

// share is the part of configuration all's time that configuration
// without does not spend, round by round: median (range).
func (r *results) share(all, without int) string {
	var s []float64
	for k := range r.perWrite[all] {
		s = append(s, 1-float64(r.perWrite[without][k])/float64(r.perWrite[all][k]))
	}
	slices.Sort(s)
	return fmt.Sprintf("%.0f %% (%.0f–%.0f)", 100*s[len(s)/2], 100*s[0], 100*s[len(s)-1])
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
