package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// repairWithin is how soon Steward must put its registration back.
const repairWithin = 10 * time.Second

// registrationOf is both configurations' entries as the API server stores
// them, by "kind/entry", each as JSON: what a repair must restore exactly
// (caBundle included). A missing configuration has no entries.
func registrationOf(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, u); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		list, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, e := range list {
			m := e.(map[string]any)
			data, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			out[kind+"/"+m["name"].(string)] = string(data)
		}
	}
	return out, nil
}

// entryIndex is the index of the validating entry named name.
func entryIndex(t *testing.T, ctx context.Context, name string) int {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: harness.WebhookConfigurationName}, vwc); err != nil {
		t.Fatal(err)
	}
	for i, wh := range vwc.Webhooks {
		if wh.Name == name {
			return i
		}
	}
	t.Fatalf("the ValidatingWebhookConfiguration has no entry %s", name)
	return -1
}

// jsonPatch patches Steward's ValidatingWebhookConfiguration as a person
// would, with kubectl (field manager kubectl-patch).
func jsonPatch(t *testing.T, ctx context.Context, ops ...string) {
	t.Helper()
	if _, _, err := env.Kubectl(ctx, "", "patch", "validatingwebhookconfiguration", harness.WebhookConfigurationName,
		"--type=json", "-p", "["+strings.Join(ops, ",")+"]"); err != nil {
		t.Fatal(err)
	}
}

// TestStewardKeepsItsRegistration proves, through the API server, that
// Steward running as the shipped Deployment does (--keep-registration)
// puts back every weakening of its webhook configurations within
// seconds, exactly as it was (caBundle included), and reports each: the
// metric by configuration and entry, an Event on the configuration naming
// the field manager and the fields it changed, and a log line. Afterwards
// the guarded write is refused again.
func TestStewardKeepsItsRegistration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	s, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, KeepRegistration: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.RestartSteward(context.Background(), harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
	})
	want, err := registrationOf(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What the harness registered is what `steward manifests` renders:
	// Steward, keeping what it renders, finds nothing to put back.
	time.Sleep(2 * time.Second)
	if n, err := s.Counter("steward_registration_repairs_total", nil); err != nil || n != 0 {
		t.Errorf("Steward reported %v repairs (%v) of the configurations the manifests render; want none", n, err)
	}
	t.Run("AtRest", func(t *testing.T) {
		// Keeping the registration is a watch of two objects (and of the
		// Deployment): at rest it writes nothing and reads nothing (reads
		// come from the watch; the audit log records writes only).
		const rest = 15 * time.Second
		mark := time.Now()
		cpu0, err := cpuTime(s.PID())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(rest)
		cpu1, err := cpuTime(s.PID())
		if err != nil {
			t.Fatal(err)
		}
		writes, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
			at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp)
			return err == nil && at.After(mark) && ev.ObjectRef != nil && strings.HasSuffix(ev.ObjectRef.Resource, "webhookconfigurations")
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(writes) > 0 {
			t.Errorf("at rest, %d writes to webhook configurations, the first %s %s by %s", len(writes), writes[0].Verb, writes[0].RequestURI, writes[0].User.Username)
		}
		t.Logf("at rest for %s: Steward (every rule's caches, the audit's and the registration's elections, and the keeper) used %s of CPU, and wrote no webhook configuration", rest, cpu1-cpu0)
	})
	const fleet, flux, suspend = "fleetguard.steward.dev", "fluxguard.steward.dev", "suspendnotice.steward.dev"
	tests := []struct {
		name string
		// entry is the entry the change weakens (the metric's label).
		entry, kind string
		change      func(t *testing.T)
		// manager is the field manager the Event must name ("" when none
		// is left to name: a removal or a deletion).
		manager string
	}{
		{name: "EntryRemoved", entry: fleet, kind: "ValidatingWebhookConfiguration", change: func(t *testing.T) {
			jsonPatch(t, ctx, fmt.Sprintf(`{"op":"remove","path":"/webhooks/%d"}`, entryIndex(t, ctx, fleet)))
		}},
		{name: "FailurePolicyWeakened", entry: flux, kind: "ValidatingWebhookConfiguration", manager: "kubectl-patch", change: func(t *testing.T) {
			jsonPatch(t, ctx, fmt.Sprintf(`{"op":"replace","path":"/webhooks/%d/failurePolicy","value":"Ignore"}`, entryIndex(t, ctx, flux)))
		}},
		{name: "SelectorWidened", entry: fleet, kind: "ValidatingWebhookConfiguration", manager: "kubectl-patch", change: func(t *testing.T) {
			jsonPatch(t, ctx, fmt.Sprintf(`{"op":"add","path":"/webhooks/%d/namespaceSelector/matchExpressions/0/values/-","value":"default"}`, entryIndex(t, ctx, fleet)))
		}},
		{name: "RulesNarrowed", entry: flux, kind: "ValidatingWebhookConfiguration", manager: "kubectl-patch", change: func(t *testing.T) {
			// Only deletes of the first rule's kinds stay guarded. (An empty
			// list would be a removal, which no field manager records.)
			jsonPatch(t, ctx, fmt.Sprintf(`{"op":"replace","path":"/webhooks/%d/rules/0/operations","value":["DELETE"]}`, entryIndex(t, ctx, flux)))
		}},
		{name: "ConfigurationDeleted", entry: fleet, kind: "ValidatingWebhookConfiguration", change: func(t *testing.T) {
			if _, _, err := env.Kubectl(ctx, "", "delete", "validatingwebhookconfiguration", harness.WebhookConfigurationName); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "MutatingConfigurationDeleted", entry: suspend, kind: "MutatingWebhookConfiguration", change: func(t *testing.T) {
			if _, _, err := env.Kubectl(ctx, "", "delete", "mutatingwebhookconfiguration", harness.WebhookConfigurationName); err != nil {
				t.Fatal(err)
			}
		}},
	}
	jane, err := env.As("jane", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("Steward's registration log:\n%s", registrationLog(s.Log()))
				}
			}()
			labels := map[string]string{"kind": tc.kind, "configuration": harness.WebhookConfigurationName, "entry": tc.entry}
			before, err := s.Counter("steward_registration_repairs_total", labels)
			if err != nil {
				t.Fatal(err)
			}
			changed := time.Now()
			tc.change(t)
			var took time.Duration
			harness.Eventually(t, repairWithin, func() error {
				got, err := registrationOf(ctx)
				if err != nil {
					return err
				}
				for k, v := range want {
					if got[k] != v {
						return fmt.Errorf("%s is not back as it was:\n got %s\nwant %s", k, got[k], v)
					}
				}
				took = time.Since(changed)
				return nil
			})
			t.Logf("put back %v after the change", took.Round(10*time.Millisecond))
			harness.Eventually(t, repairWithin, func() error {
				after, err := s.Counter("steward_registration_repairs_total", labels)
				if err != nil {
					return err
				}
				if after <= before {
					return fmt.Errorf("steward_registration_repairs_total%v stayed %v", labels, after)
				}
				return nil
			})
			harness.Eventually(t, repairWithin, func() error { return repairEvent(ctx, tc.kind, tc.entry, tc.manager, changed) })
			if log := s.Log(); !strings.Contains(log, "Steward put its webhook configuration back") || !strings.Contains(log, tc.entry) {
				t.Errorf("no log line reports the repair of %s", tc.entry)
			}
			if err := env.WaitWebhooksEffective(ctx, harness.PropagationTimeout); err != nil {
				t.Fatal(err)
			}
			meta := fleetMeta("registration-" + strings.ToLower(tc.name))
			meta.Namespace = corev1.NamespaceDefault
			cm := &corev1.ConfigMap{ObjectMeta: meta}
			if err := jane.Create(ctx, cm, client.DryRunAll); err == nil || !strings.Contains(err.Error(), fleetguardHook) {
				t.Errorf("after the repair, a person's ConfigMap carrying Fleet's keys: %v; want fleetguard's denial", err)
			}
		})
	}
}

// repairEvent finds the Event Steward recorded, since since, on its
// configuration of kind for a repair of entry, naming manager when set.
func repairEvent(ctx context.Context, kind, entry, manager string, since time.Time) error {
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctx, list, client.InNamespace(corev1.NamespaceDefault)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.Reason != "RegistrationRepaired" || e.Regarding.Kind != kind || e.Regarding.Name != harness.WebhookConfigurationName {
			continue
		}
		at := e.EventTime.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		}
		if at.Before(since.Add(-time.Second)) {
			continue
		}
		seen = append(seen, e.Note)
		if e.Type == corev1.EventTypeWarning && e.ReportingController == "steward.dev/registration" &&
			strings.Contains(e.Note, entry) && (manager == "" || strings.Contains(e.Note, manager)) {
			return nil
		}
	}
	return fmt.Errorf("no RegistrationRepaired Event on %s %s naming %s and %q; found %q", kind, harness.WebhookConfigurationName, entry, manager, seen)
}

// registrationLog is the lines of a Steward log about its registration.
func registrationLog(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "registration") || strings.Contains(line, "webhook configuration") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// configurationsGone fails unless both of Steward's configurations stay
// deleted for d.
func configurationsGone(t *testing.T, ctx context.Context, d time.Duration, why string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		got, err := registrationOf(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			t.Fatalf("%s: Steward's configurations are back (%d entries); they must stay deleted", why, len(got))
		}
	}
}

// deleteConfigurations deletes both configurations, as the runbook and an
// uninstall do.
func deleteConfigurations(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, _, err := env.Kubectl(ctx, "", "delete", "validatingwebhookconfiguration/"+harness.WebhookConfigurationName,
		"mutatingwebhookconfiguration/"+harness.WebhookConfigurationName); err != nil {
		t.Fatal(err)
	}
}

// TestRunbookAndUninstallAreNotUndone proves that keeping the
// registration leaves the deliberate ways to remove it working: the
// runbook's emergency removal (scale Steward to zero, delete its
// configurations) holds while Steward is down, even when the
// configurations are deleted while its replicas are still terminating,
// and Steward puts them back once scaled up again; an uninstall, which
// deletes the configurations and Steward's Deployment in one pass (here
// the configurations first, the harder order), is never undone.
func TestRunbookAndUninstallAreNotUndone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env.LogOnFailure(t)
	s, err := env.RestartStewardWith(ctx, harness.StewardOptions{Config: harness.DefaultConfig, ProvideCerts: true, KeepRegistration: true,
		Args: []string{"--shutdown-delay=5s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := env.RestartSteward(context.Background(), harness.DefaultConfig); err != nil {
			t.Errorf("restoring the default Steward: %v", err)
		}
	})

	t.Run("Runbook", func(t *testing.T) {
		// kubectl scale --replicas=0: the replica gets SIGTERM and drains
		// for --shutdown-delay; the configurations are deleted meanwhile.
		if err := s.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		deleteConfigurations(t, ctx)
		select {
		case <-s.Done():
		case <-time.After(harness.StopTimeout):
			t.Fatal("Steward did not exit after SIGTERM")
		}
		configurationsGone(t, ctx, 2*recreateWait, "after the runbook's removal")
		// kubectl scale --replicas=3: Steward puts its registration back.
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, repairWithin, func() error {
			got, err := registrationOf(ctx)
			if err != nil {
				return err
			}
			if len(got) == 0 {
				return errors.New("Steward scaled up again has not re-created its configurations")
			}
			return nil
		})
		if err := env.WaitWebhooksEffective(ctx, harness.PropagationTimeout); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Uninstall", func(t *testing.T) {
		deployment := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "steward", Namespace: harness.StewardNamespace},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "steward"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "steward"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "steward", Image: "ghcr.io/stewardhq/steward:v0.1.0"}}},
				},
			},
		}
		if err := env.Client.Create(ctx, deployment); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), deployment) })
		time.Sleep(time.Second) // the keeper's watch sees the Deployment
		deleteConfigurations(t, ctx)
		if err := env.Client.Delete(ctx, deployment); err != nil {
			t.Fatal(err)
		}
		configurationsGone(t, ctx, 3*recreateWait, "after the uninstall")
		if !strings.Contains(s.Log(), "Steward is being uninstalled") {
			t.Error("Steward did not log that it stopped keeping its registration for the uninstall")
		}
	})
}

// recreateWait is how long Steward leaves a deleted configuration
// deleted before it re-creates it (rulessync's recreateAfter).
const recreateWait = 3 * time.Second

// cpuTime is the user and system CPU time a process has used, from
// /proc/<pid>/stat (in clock ticks of 10 ms, Linux's USER_HZ).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after it. utime and stime are fields 14 and 15 of the line.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
