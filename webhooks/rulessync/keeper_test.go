package rulessync

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stewardhq/steward/webhooks/rule"
)

// entryMap is one entry as the API server stores it, in unstructured form.
func entryMap(name, failurePolicy string, caBundle string) map[string]any {
	e := map[string]any{"name": name, "failurePolicy": failurePolicy, "sideEffects": "None",
		"clientConfig": map[string]any{"service": map[string]any{"name": "steward", "namespace": "steward-system"}}}
	if caBundle != "" {
		e["clientConfig"].(map[string]any)["caBundle"] = caBundle
	}
	return e
}

func object(generation int64, entries ...map[string]any) map[string]any {
	list := []any{}
	for _, e := range entries {
		list = append(list, e)
	}
	return map[string]any{"metadata": map[string]any{"name": "steward", "generation": generation, "uid": "u1"}, "webhooks": list}
}

func TestRepairOfNamesTheEntriesAndFieldsPutBack(t *testing.T) {
	c := &configuration{kind: "ValidatingWebhookConfiguration", name: "steward"}
	owned := []string{"a.steward.dev", "b.steward.dev"}
	tests := map[string]struct {
		before, after map[string]any
		want          *Repair
	}{
		"NothingChanged": {
			before: object(3, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "ca")),
			after:  object(3, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "ca")),
		},
		"FailurePolicyWeakened": {
			before: object(3, entryMap("a.steward.dev", "Ignore", "ca"), entryMap("b.steward.dev", "Fail", "ca")),
			after:  object(4, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "ca")),
			want: &Repair{Kind: c.kind, Configuration: "steward", Entries: []string{"a.steward.dev"},
				Fields: map[string][]string{"a.steward.dev": {"failurePolicy"}}},
		},
		"EntryRemoved": {
			before: object(3, entryMap("a.steward.dev", "Fail", "ca")),
			after:  object(4, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "")),
			want: &Repair{Kind: c.kind, Configuration: "steward", Entries: []string{"b.steward.dev"},
				Fields: map[string][]string{"b.steward.dev": {"(entry)"}}},
		},
		"OnlyTheCABundleDiffers": {
			// Another writer's caBundle is never Steward's to repair.
			before: object(3, entryMap("a.steward.dev", "Fail", "old"), entryMap("b.steward.dev", "Fail", "old")),
			after:  object(4, entryMap("a.steward.dev", "Fail", "new"), entryMap("b.steward.dev", "Fail", "new")),
		},
		"AnEntryNotStewards": {
			before: object(3, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "ca"), entryMap("other.example.org", "Ignore", "")),
			after:  object(4, entryMap("a.steward.dev", "Fail", "ca"), entryMap("b.steward.dev", "Fail", "ca"), entryMap("other.example.org", "Fail", "")),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := repairOf(c, tc.before, tc.after, owned)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

func TestChangedByNamesOtherManagersAndTheirFields(t *testing.T) {
	fields := func(m map[string]any) map[string]any { return m }
	entry := func(manager, op, at string, f map[string]any) any {
		return map[string]any{"manager": manager, "operation": op, "time": at, "fieldsV1": f}
	}
	owns := fields(map[string]any{"f:webhooks": map[string]any{
		`k:{"name":"a.steward.dev"}`: map[string]any{".": map[string]any{}, "f:failurePolicy": map[string]any{},
			"f:namespaceSelector": map[string]any{"f:matchExpressions": map[string]any{}}},
		`k:{"name":"other.example.org"}`: map[string]any{"f:failurePolicy": map[string]any{}},
	}})
	seen := map[string]any{"metadata": map[string]any{"managedFields": []any{
		entry("steward", "Apply", "t1", nil),
		entry("cainjector", "Update", "t1", nil),
	}}}
	live := map[string]any{"metadata": map[string]any{"managedFields": []any{
		entry("steward", "Apply", "t2", nil),
		entry("steward-claimguard", "Apply", "t2", nil),
		entry("cainjector", "Update", "t1", nil),
		entry("kubectl-edit", "Update", "t2", owns),
	}}}
	got := changedBy(seen, live, []string{"a.steward.dev"})
	want := []Change{{Manager: "kubectl-edit", Operation: "Update", Time: "t2",
		Fields: []string{"webhooks[a.steward.dev].failurePolicy", "webhooks[a.steward.dev].namespaceSelector.matchExpressions"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Steward's own managers and those unchanged since the last sync are not named: -want, +got:\n%s", diff)
	}
}

func TestRestoredObjectKeepsWhatOthersWrote(t *testing.T) {
	body := object(0, entryMap("a.steward.dev", "Fail", ""), entryMap("b.steward.dev", "Fail", ""))
	delete(body["metadata"].(map[string]any), "generation")
	delete(body["metadata"].(map[string]any), "uid")
	seen := object(4, entryMap("a.steward.dev", "Ignore", "Y2EtYQ=="))
	seen["metadata"].(map[string]any)["annotations"] = map[string]any{"cert-manager.io/inject-ca-from": "steward-system/steward-serving-cert"}
	seen["metadata"].(map[string]any)["labels"] = map[string]any{"app.kubernetes.io/managed-by": "Helm"}

	got := restoredObject(body, seen, []byte("file-ca"))
	if got["metadata"].(map[string]any)["annotations"].(map[string]any)["cert-manager.io/inject-ca-from"] == nil {
		t.Errorf("the injector's annotation was not restored: %v", got["metadata"])
	}
	for name, e := range entriesOf(got) {
		if ca := e["clientConfig"].(map[string]any)["caBundle"]; ca != "Y2EtYQ==" {
			t.Errorf("%s: caBundle %v, want the one last seen (an entry seen without one gets another's)", name, ca)
		}
		if e["failurePolicy"] != "Fail" {
			t.Errorf("%s: failurePolicy %v, want the rendered Fail", name, e["failurePolicy"])
		}
	}
	fresh := restoredObject(body, nil, []byte("file-ca"))
	for name, e := range entriesOf(fresh) {
		if ca := e["clientConfig"].(map[string]any)["caBundle"]; ca != base64([]byte("file-ca")) {
			t.Errorf("%s: never having seen the configuration, caBundle %v, want the CA file's", name, ca)
		}
	}
}

// keptSpecs are a validating rule with two entries and a mutating one.
func keptSpecs() []rule.Spec {
	r := rule.Resources(rule.Operations(admissionregistrationv1.Create), []string{""}, []string{"v1"}, []string{"configmaps"}, admissionregistrationv1.NamespacedScope)
	entry := func(name string) rule.Webhook {
		return rule.Webhook{Name: name, Path: "/" + name, Rules: []admissionregistrationv1.RuleWithOperations{r},
			FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 5}
	}
	return []rule.Spec{
		{Name: "v", Type: rule.Validating, Webhooks: []rule.Webhook{entry("v1.steward.dev"), entry("v2.steward.dev")}},
		{Name: "m", Type: rule.Mutating, Webhooks: []rule.Webhook{entry("m.steward.dev")}},
	}
}

func TestKeeperRecreatesADeletedConfigurationOnlyOutsideAnUninstall(t *testing.T) {
	reg := Registration{Validating: "steward", Mutating: "steward", Target: rule.Target{Namespace: "steward-system", Service: "steward"}}
	tests := map[string]struct {
		uninstalling bool
		wait         time.Duration
		want         bool
	}{
		"DeletedJustNow":      {wait: 0, want: false},
		"StayedDeleted":       {wait: recreateAfter, want: true},
		"DuringAnUninstall":   {uninstalling: true, wait: recreateAfter, want: false},
		"LongBeforeUninstall": {uninstalling: true, wait: time.Hour, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			kube := fake.NewClientset()
			reports := NewReports(nil, logr.Discard())
			s := NewWith(kube, keptSpecs(), logr.Discard(), Options{Keep: &reg, Reports: reports})
			now := time.Unix(1000, 0)
			s.keep.now = func() time.Time { return now }
			s.keep.uninstalling = func() (bool, string) { return tc.uninstalling, "test" }
			s.syncAll(ctx)
			now = now.Add(tc.wait)
			s.syncAll(ctx)
			_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
			if got := err == nil; got != tc.want {
				t.Fatalf("re-created: %v (err %v), want %v", got, err, tc.want)
			}
			if !tc.want {
				return
			}
			m, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "steward", metav1.GetOptions{})
			if err != nil || len(m.Webhooks) != 1 || *m.Webhooks[0].ClientConfig.Service.Path != "/m.steward.dev" {
				t.Errorf("the mutating configuration was not re-created as rendered: %v %v", m, err)
			}
			if got := testutil.ToFloat64(reports.repairs.WithLabelValues("ValidatingWebhookConfiguration", "steward", "v2.steward.dev")); got != 1 {
				t.Errorf("steward_registration_repairs_total for a re-created entry = %v, want 1", got)
			}
		})
	}
}

func TestKeeperRendersWhatTheManifestsRenderButTheCABundleAndDynamicRules(t *testing.T) {
	src := newSource(true, sampleRule(""))
	specs := append(keptSpecs(), dynamicSpec(rule.Validating, src))
	k := newKeeper(fake.NewClientset(), specs, Registration{Validating: "steward", Target: rule.Target{URL: "https://127.0.0.1:9443/"}}, nil, logr.Discard())
	body := k.render(rule.Validating, "steward")
	names := entryNames(body)
	if diff := cmp.Diff([]string{"v1.steward.dev", "v2.steward.dev", "sample.steward.dev", "sample-managed.steward.dev", "sample-delete.steward.dev"}, names); diff != "" {
		t.Errorf("entries: -want, +got:\n%s", diff)
	}
	for name, e := range entriesOf(body) {
		cc := e["clientConfig"].(map[string]any)
		if !strings.HasPrefix(cc["url"].(string), "https://127.0.0.1:9443") || strings.Contains(cc["url"].(string), "9443//") || cc["service"] != nil || cc["caBundle"] != nil {
			t.Errorf("%s: clientConfig %v, want the URL target only, no caBundle", name, cc)
		}
		_, hasRules := e["rules"]
		if dynamic := name == "sample.steward.dev" || name == "sample-delete.steward.dev"; dynamic == hasRules {
			t.Errorf("%s: rules present %v; the rules of entries with DynamicRules are their rule's manager's alone", name, hasRules)
		}
	}
	want := keptSpecs()[0].Webhooks[0].ValidatingWebhook(rule.Target{URL: "https://127.0.0.1:9443"})
	got := admissionregistrationv1.ValidatingWebhook{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(entriesOf(body)["v1.steward.dev"], &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an entry differs from what the manifests render: -want, +got:\n%s", diff)
	}
}

func TestRepairNoteNamesWhoAndWhat(t *testing.T) {
	p := Repair{Kind: "ValidatingWebhookConfiguration", Configuration: "steward", Entries: []string{"a.steward.dev"},
		Fields:    map[string][]string{"a.steward.dev": {"failurePolicy"}},
		ChangedBy: []Change{{Manager: "kubectl-edit", Operation: "Update", Time: "t2", Fields: []string{"webhooks[a.steward.dev].failurePolicy"}}}}
	for _, want := range []string{"a.steward.dev (failurePolicy)", "kubectl-edit (Update at t2) owning webhooks[a.steward.dev].failurePolicy"} {
		if !strings.Contains(p.note(), want) {
			t.Errorf("note %q lacks %q", p.note(), want)
		}
	}
}

func TestKeeperKeepsTheInstallsOverrides(t *testing.T) {
	entries := []string{"v1.steward.dev", "v2.steward.dev", "m.steward.dev"}
	overrides, err := ParseOverrides(`{"v1.steward.dev":{"failurePolicy":"Ignore","timeoutSeconds":7,"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"NotIn","values":["x"]}]}}}`, entries)
	if err != nil {
		t.Fatal(err)
	}
	k := newKeeper(fake.NewClientset(), keptSpecs(), Registration{Validating: "steward", Target: rule.Target{Namespace: "steward-system", Service: "steward"}, Overrides: overrides}, nil, logr.Discard())
	got := map[string]admissionregistrationv1.ValidatingWebhook{}
	for name, e := range entriesOf(k.render(rule.Validating, "steward")) {
		var wh admissionregistrationv1.ValidatingWebhook
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(e, &wh); err != nil {
			t.Fatal(err)
		}
		got[name] = wh
	}
	v1 := got["v1.steward.dev"]
	if *v1.FailurePolicy != admissionregistrationv1.Ignore || *v1.TimeoutSeconds != 7 {
		t.Errorf("v1: failurePolicy %s, timeout %d; want the install's Ignore and 7", *v1.FailurePolicy, *v1.TimeoutSeconds)
	}
	exprs := v1.NamespaceSelector.MatchExpressions
	if len(exprs) != 2 || exprs[0].Key != rule.NamespaceLabel || exprs[1].Key != "team" {
		t.Errorf("v1: namespaceSelector %v; want Steward's exclusion, then the install's", exprs)
	}
	if v2 := got["v2.steward.dev"]; *v2.FailurePolicy != admissionregistrationv1.Fail || *v2.TimeoutSeconds != 5 {
		t.Errorf("v2, not overridden: failurePolicy %s, timeout %d; want its own Fail and 5", *v2.FailurePolicy, *v2.TimeoutSeconds)
	}
}

func TestParseOverridesNamesWhatIsWrong(t *testing.T) {
	entries := []string{"a.steward.dev"}
	tests := map[string]struct{ in, want string }{
		"UnknownEntry":   {`{"b.steward.dev":{}}`, "b.steward.dev: Steward has no webhook entry"},
		"UnknownField":   {`{"a.steward.dev":{"timeout":5}}`, `unknown field "timeout"`},
		"BadPolicy":      {`{"a.steward.dev":{"failurePolicy":"ignore"}}`, "a.steward.dev.failurePolicy"},
		"BadTimeout":     {`{"a.steward.dev":{"timeoutSeconds":31}}`, "a.steward.dev.timeoutSeconds"},
		"BadSelector":    {`{"a.steward.dev":{"objectSelector":{"matchExpressions":[{"key":"k","operator":"In"}]}}}`, "a.steward.dev.objectSelector"},
		"NotAnObject":    {`[1]`, "not a JSON object"},
		"EmptyIsNothing": {``, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseOverrides(tc.in, entries)
			if tc.want == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
