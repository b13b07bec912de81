package webhookserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// configVolume is a directory laid out as the kubelet lays out a ConfigMap
// volume: config.yaml is a symlink to ..data/config.yaml, and ..data a
// symlink to a timestamped directory. A new version is written to a new
// directory and ..data swapped to it in one rename, so the file's path
// never changes, only what it resolves to.
type configVolume struct {
	dir      string
	versions int
}

func newConfigVolume(t *testing.T, content string) *configVolume {
	t.Helper()
	v := &configVolume{dir: t.TempDir()}
	v.write(t, content)
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *configVolume) path() string { return filepath.Join(v.dir, "config.yaml") }

func (v *configVolume) write(t *testing.T, content string) {
	t.Helper()
	v.versions++
	version := fmt.Sprintf("..2026_11_25_00_00_%02d.%d", v.versions, v.versions)
	if err := os.Mkdir(filepath.Join(v.dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, version, "config.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// recordedEvent is one Event a fakeRecorder was given.
type recordedEvent struct {
	Regarding string
	Type      string
	Reason    string
	Note      string
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (f *fakeRecorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...interface{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := fmt.Sprintf("%v", regarding)
	if o, ok := regarding.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		ref = o.GetObjectKind().GroupVersionKind().Kind
	}
	f.events = append(f.events, recordedEvent{Regarding: ref, Type: eventtype, Reason: reason, Note: fmt.Sprintf(note, args...)})
}

func (f *fakeRecorder) take() []recordedEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.events
	f.events = nil
	return out
}

// logLines collects a logger's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.lines, "\n")
	l.lines = nil
	return out
}

// reloadFixture is a configReloader serving every rule of its start-up
// configuration, as `steward serve` does, minus the manager.
type reloadFixture struct {
	volume   *configVolume
	reloader *configReloader
	served   *servedRules
	metrics  *reloadMetrics
	events   *fakeRecorder
	log      *logLines
}

func newReloadFixture(t *testing.T, content string) *reloadFixture {
	t.Helper()
	f := &reloadFixture{volume: newConfigVolume(t, content), metrics: newReloadMetrics(), events: &fakeRecorder{}, log: &logLines{}}
	data, err := os.ReadFile(f.volume.path())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, f.volume.path(), webhooks.Sections())
	if err != nil {
		t.Fatal(err)
	}
	f.served = newServedRules(cfg, webhooks.Rules(cfg), nil, serving.NewMetrics(), logr.Discard())
	events := newConfigEvents(f.events, "steward-system", "steward-7d9f8-abcde", "0f9c1d7e-1111-2222-3333-444455556666")
	f.reloader = newConfigReloader(f.volume.path(), data, cfg, f.served, f.metrics, events, f.log.logger())
	return f
}

// swap writes content as the ConfigMap's new version and reloads.
func (f *reloadFixture) swap(t *testing.T, content string) {
	t.Helper()
	f.volume.write(t, content)
	f.reloader.reload()
}

// helmReleaseV2beta1 is a write of a HelmRelease through v2beta1, which
// Flux 2.6 serves (deprecated) and 2.7 removed: apimigration allows it
// with a warning with fluxVersion 2.6 and refuses it with 2.7.
func helmReleaseV2beta1(user string) admission.Request {
	gvr := schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2beta1", Resource: "helmreleases"}
	obj := map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2beta1", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps"},
		"spec":     map[string]any{"interval": "5m", "chart": map[string]any{"spec": map[string]any{"chart": "podinfo"}}},
	}
	return admissiontest.Create(gvr, "HelmRelease", obj).User(user).Build()
}

func (f *reloadFixture) allowed(path string, req admission.Request) bool {
	return f.served.handler(path).Handle(context.Background(), req).Allowed
}

func (f *reloadFixture) metricValues() map[string]float64 {
	return map[string]float64{
		"last_reload_successful": testutil.ToFloat64(f.metrics.successful),
		"reloads_success":        testutil.ToFloat64(f.metrics.reloads.WithLabelValues(reloadSuccess)),
		"reloads_failure":        testutil.ToFloat64(f.metrics.reloads.WithLabelValues(reloadFailure)),
	}
}

const apimigrationPath = "/mutate/apimigration"

const fluxVersion27 = harnessHeader + `rules:
  apimigration:
    fluxVersion: "2.7"
`

const harnessHeader = "apiVersion: config.steward.dev/v1alpha1\nkind: StewardConfiguration\n"

// TestConfigReloadKeepsTheLastGoodConfiguration swaps the configuration
// good, bad, good under a running server, as the kubelet swaps a ConfigMap
// volume: each good file decides the next request, the bad one is refused
// with a log line and an Event naming the field, the metrics say so, and
// the last good configuration keeps deciding meanwhile.
func TestConfigReloadKeepsTheLastGoodConfiguration(t *testing.T) {
	f := newReloadFixture(t, harnessHeader)
	if !f.allowed(apimigrationPath, helmReleaseV2beta1("alice")) {
		t.Fatal("with the default fluxVersion 2.6, a write through v2beta1 is refused; want allowed with a warning")
	}
	want := map[string]float64{"last_reload_successful": 1, "reloads_success": 0, "reloads_failure": 0}
	if diff := cmp.Diff(want, f.metricValues()); diff != "" {
		t.Errorf("metrics after start-up (-want +got):\n%s", diff)
	}
	started := testutil.ToFloat64(f.metrics.successTime)
	if started == 0 {
		t.Error("steward_config_last_reload_success_timestamp_seconds is 0 after start-up")
	}

	// Good: fluxVersion 2.7 refuses v2beta1.
	f.reloader.now = func() time.Time { return time.Unix(2_000_000_000, 0) }
	f.swap(t, fluxVersion27)
	if f.allowed(apimigrationPath, helmReleaseV2beta1("alice")) {
		t.Error("after reloading fluxVersion 2.7, a write through v2beta1 is allowed; want refused")
	}
	if got := testutil.ToFloat64(f.metrics.successTime); got != 2_000_000_000 {
		t.Errorf("success timestamp after a reload = %v, want 2e9", got)
	}
	if log := f.log.take(); !strings.Contains(log, `"configuration reloaded"`) || !strings.Contains(log, "rules.apimigration.fluxVersion") {
		t.Errorf("the reload is not logged with the changed field:\n%s", log)
	}
	wantEvents := []recordedEvent{{Regarding: "Pod", Type: "Normal", Reason: eventConfigReloaded,
		Note: "Loaded the configuration file " + f.volume.path() + "; in effect now: rules.apimigration.fluxVersion"}}
	if diff := cmp.Diff(wantEvents, f.events.take()); diff != "" {
		t.Errorf("Events after a good reload (-want +got):\n%s", diff)
	}

	// Bad: an unknown mode. Refused; 2.7 stays in effect.
	f.reloader.now = func() time.Time { return time.Unix(2_000_000_100, 0) }
	f.swap(t, harnessHeader+"exemptUsers: [alice]\nrules:\n  apimigration:\n    mode: sometimes\n")
	if f.allowed(apimigrationPath, helmReleaseV2beta1("alice")) {
		t.Error("after a refused file, a write through v2beta1 is allowed: the refused file (or a default) took effect instead of the last good one")
	}
	want = map[string]float64{"last_reload_successful": 0, "reloads_success": 1, "reloads_failure": 1}
	if diff := cmp.Diff(want, f.metricValues()); diff != "" {
		t.Errorf("metrics after a refused file (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(f.metrics.successTime); got != 2_000_000_000 {
		t.Errorf("success timestamp after a refused file = %v, want the last success's, 2e9", got)
	}
	if log := f.log.take(); !strings.Contains(log, "configuration refused") || !strings.Contains(log, "rules.apimigration.mode") {
		t.Errorf("the refusal is not logged naming the field rules.apimigration.mode:\n%s", log)
	}
	events := f.events.take()
	if len(events) != 1 || events[0].Type != "Warning" || events[0].Reason != eventConfigRejected || events[0].Regarding != "Pod" ||
		!strings.Contains(events[0].Note, "rules.apimigration.mode") || !strings.Contains(events[0].Note, "last good configuration stays in effect") {
		t.Errorf("want one Warning Event %s on the Pod naming rules.apimigration.mode, got %+v", eventConfigRejected, events)
	}

	// The same bad file again (the kubelet rewrites it, or only the tick
	// comes round): judged once, not once per tick.
	f.reloader.reload()
	f.swap(t, harnessHeader+"exemptUsers: [alice]\nrules:\n  apimigration:\n    mode: sometimes\n")
	if got := testutil.ToFloat64(f.metrics.reloads.WithLabelValues(reloadFailure)); got != 1 {
		t.Errorf("the unchanged bad file was counted %v times, want once", got)
	}
	if events := f.events.take(); len(events) != 0 {
		t.Errorf("the unchanged bad file recorded Events again: %+v", events)
	}

	// Good again: alice is exempt, so her write is allowed (bypassed).
	f.swap(t, fluxVersion27+"exemptUsers: [alice]\n")
	resp := f.served.handler(apimigrationPath).Handle(context.Background(), helmReleaseV2beta1("alice"))
	if !resp.Allowed || resp.AuditAnnotations["bypassed-by"] != "alice" {
		t.Errorf("after adding alice to exemptUsers, her write: allowed %v, audit %v; want allowed, bypassed-by alice", resp.Allowed, resp.AuditAnnotations)
	}
	if f.allowed(apimigrationPath, helmReleaseV2beta1("bob")) {
		t.Error("bob, not exempt, is allowed")
	}
	want = map[string]float64{"last_reload_successful": 1, "reloads_success": 2, "reloads_failure": 1}
	if diff := cmp.Diff(want, f.metricValues()); diff != "" {
		t.Errorf("metrics after the good file (-want +got):\n%s", diff)
	}
}

// TestConfigReloadRefusesAnUnreadableFile proves a file that disappears
// (a ConfigMap whose key was removed) is refused like an invalid one.
func TestConfigReloadRefusesAnUnreadableFile(t *testing.T) {
	f := newReloadFixture(t, fluxVersion27)
	if err := os.Remove(filepath.Join(f.volume.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	f.reloader.reload()
	f.reloader.reload()
	want := map[string]float64{"last_reload_successful": 0, "reloads_success": 0, "reloads_failure": 1}
	if diff := cmp.Diff(want, f.metricValues()); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if f.allowed(apimigrationPath, helmReleaseV2beta1("alice")) {
		t.Error("without a file the last good configuration (fluxVersion 2.7) no longer decides")
	}
}

// TestConfigReloadSaysWhatTakesEffectWhere proves each kind of change is
// reported where it takes effect: settings the rules judge by at once,
// what the manifests register only once they are rendered again, and what
// Steward fixes at start-up only after a restart.
func TestConfigReloadSaysWhatTakesEffectWhere(t *testing.T) {
	cases := map[string]struct {
		reason       string
		start, next  string
		registration []string
		restart      []string
	}{
		"IgnoredFieldsAreJudgedOnly": {
			reason: "fleetguard's ignored fields are read by its handler only",
			start:  harnessHeader,
			next:   harnessHeader + "rules:\n  fleetguard:\n    ignoredFields: [{group: apps, kind: Deployment, paths: [/spec/replicas]}]\n",
		},
		"AgentUsersAreInMatchConditions": {
			reason:       "the agent's identities are written into the webhooks' matchConditions",
			start:        harnessHeader,
			next:         harnessHeader + "rules:\n  fleetguard:\n    agentUsers: [system:serviceaccount:cattle-fleet-system:fleet-agent, system:serviceaccount:ci:deployer]\n",
			registration: []string{"rules.fleetguard.agentUsers"},
		},
		"ModeOffUnregisters": {
			reason:       "a rule turned off has no webhooks in the manifests rendered for the file",
			start:        harnessHeader,
			next:         harnessHeader + "rules:\n  installplanguard:\n    mode: \"off\"\n",
			registration: []string{"rules.installplanguard.mode"},
		},
		"ModeOnNeedsARestart": {
			reason:       "a rule off at start-up has no route and no caches",
			start:        harnessHeader + "rules:\n  installplanguard:\n    mode: \"off\"\n",
			next:         harnessHeader,
			registration: []string{"rules.installplanguard.mode"},
			restart:      []string{"rules.installplanguard.mode"},
		},
		"SyncedWebhookRulesNeedARestart": {
			reason:       "the webhook rules syncer keeps the configurations it started with",
			start:        harnessHeader,
			next:         harnessHeader + "rules:\n  claimguard:\n    manageWebhookRules: false\n",
			registration: []string{"rules.claimguard.manageWebhookRules"},
			restart:      []string{"rules.claimguard.manageWebhookRules"},
		},
		"RecordingEventsNeedsARestart": {
			reason:       "the Events recorder and its permission exist only if Steward started recording",
			start:        harnessHeader + "recordEventsFor: none\n",
			next:         harnessHeader,
			registration: []string{"recordEventsFor"},
			restart:      []string{"recordEventsFor"},
		},
		"ExemptionsAreJudgedOnly": {
			reason: "exemptions are applied by Steward around every rule",
			start:  harnessHeader,
			next:   harnessHeader + "exemptGroups: [platform-admins]\nbreakGlassGroup: oncall\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newReloadFixture(t, tc.start)
			start := f.reloader.current
			f.swap(t, tc.next)
			if got := testutil.ToFloat64(f.metrics.successful); got != 1 {
				t.Fatalf("the file was refused:\n%s", f.log.take())
			}
			next, err := config.Parse([]byte(tc.next), "next", webhooks.Sections())
			if err != nil {
				t.Fatal(err)
			}
			changed := config.ChangedFields(start, next)
			if diff := cmp.Diff(tc.registration, registrationFields(start, next, changed)); diff != "" {
				t.Errorf("%s: fields needing re-rendered manifests (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.restart, f.reloader.restartFields(next)); diff != "" {
				t.Errorf("%s: fields needing a restart (-want +got):\n%s", tc.reason, diff)
			}
			log := f.log.take()
			if len(tc.registration) > 0 && !strings.Contains(log, "steward manifests --config") {
				t.Errorf("the log does not say to render the manifests:\n%s", log)
			}
			if len(tc.restart) > 0 && !strings.Contains(log, "restarts") {
				t.Errorf("the log does not say a restart is needed:\n%s", log)
			}
		})
	}
}

// TestConfigReloadTurnsARuleOffWithoutUnservingIt proves a rule turned off
// while Steward runs allows every request at its paths, which stay
// registered until the manifests are rendered again (answering 404 there
// would refuse writes), and judges again when turned back on.
func TestConfigReloadTurnsARuleOffWithoutUnservingIt(t *testing.T) {
	f := newReloadFixture(t, fluxVersion27)
	f.swap(t, fluxVersion27+"    mode: \"off\"\n")
	resp := f.served.handler(apimigrationPath).Handle(context.Background(), helmReleaseV2beta1("alice"))
	if !resp.Allowed || len(resp.Warnings) > 0 || len(resp.Patches) > 0 || len(resp.AuditAnnotations) > 0 {
		t.Errorf("with apimigration off, want allowed unjudged, got %+v", resp)
	}
	f.swap(t, fluxVersion27)
	if f.allowed(apimigrationPath, helmReleaseV2beta1("alice")) {
		t.Error("apimigration turned back on does not refuse again")
	}
}

// TestConfigReloadUnderLoad swaps configurations while requests are
// judged; run with -race, it proves a request sees one whole
// configuration and reloading shares nothing unsynchronised with serving.
func TestConfigReloadUnderLoad(t *testing.T) {
	f := newReloadFixture(t, harnessHeader)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var judged atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, path := range []string{apimigrationPath, "/validate/installplanguard", "/validate/fleetguard"} {
					_ = f.served.handler(path).Handle(context.Background(), helmReleaseV2beta1("alice"))
				}
				judged.Add(1)
			}
		}()
	}
	files := []string{fluxVersion27, harnessHeader + "rules:\n  apimigration:\n    mode: sometimes\n", harnessHeader + "exemptUsers: [alice]\n", fluxVersion27 + "    mode: warn\n"}
	for i := range 40 {
		f.swap(t, files[i%len(files)])
	}
	for judged.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	want := map[string]float64{"last_reload_successful": 1, "reloads_success": 30, "reloads_failure": 10}
	if diff := cmp.Diff(want, f.metricValues()); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

var _ serving.EventRecorder = (*fakeRecorder)(nil)

// TestConfigReloadRecordsNoEventsUnderRecordEventsForNone proves a
// configuration that records no Events records none about reloads either.
func TestConfigReloadRecordsNoEventsUnderRecordEventsForNone(t *testing.T) {
	f := newReloadFixture(t, harnessHeader)
	f.swap(t, harnessHeader+"recordEventsFor: none\n")
	f.swap(t, harnessHeader+"recordEventsFor: sometimes\n")
	if events := f.events.take(); len(events) != 0 {
		t.Errorf("Events recorded under recordEventsFor: none: %+v", events)
	}
	if got := testutil.ToFloat64(f.metrics.reloads.WithLabelValues(reloadFailure)); got != 1 {
		t.Errorf("failures = %v, want 1", got)
	}
}

// TestConfigReloadReachesTheAudit: each audit pass reads the rules and
// audit settings in effect, so a reload that turns a rule off or changes
// the audit section reaches the next pass, and the rules it audits are
// the heirs that serve requests.
func TestConfigReloadReachesTheAudit(t *testing.T) {
	f := newReloadFixture(t, harnessHeader)
	rules, cfg := f.served.forAudit()
	if cfg.Every() != config.DefaultAuditInterval || len(rules) != len(config.Defaults(webhooks.Sections()).Rules) {
		t.Fatalf("at start-up the audit reads %d rules every %s, want every rule every %s", len(rules), cfg.Every(), config.DefaultAuditInterval)
	}
	before := map[string]rule.Rule{}
	for _, r := range rules {
		before[r.Name] = r.Rule
	}
	f.swap(t, harnessHeader+"audit:\n  interval: 1m\n  disabledRules: [fleetguard]\nrules:\n  suspendnotice:\n    mode: \"off\"\n")
	rules, cfg = f.served.forAudit()
	if cfg.Every() != time.Minute || !cfg.Disabled("fleetguard") {
		t.Errorf("after the reload the audit runs every %s with disabledRules %v, want 1m and [fleetguard]", cfg.Every(), cfg.DisabledRules)
	}
	for _, r := range rules {
		switch {
		case r.Name == "suspendnotice" && r.Mode != rule.Off:
			t.Errorf("suspendnotice turned off reaches the audit in mode %s", r.Mode)
		case r.Name != "suspendnotice" && r.Rule == before[r.Name]:
			t.Errorf("%s: the audit still reads the rule built at start-up, not its heir", r.Name)
		}
	}
}
