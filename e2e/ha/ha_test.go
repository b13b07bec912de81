package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/e2e/harness"
)

// rounds is how many times each disruption is repeated.
const rounds = 3

// settle is how long the load runs before a disruption and after the
// replicas are all back.
const settle = 2 * time.Second

// nextVersion is the version a rolling upgrade moves the replicas to.
const nextVersion = "v0.0.1-e2e-next"

// optOutConfig is haConfig with one setting changed: fluxguard's denials
// then name the group that may pause Flux (optOutHint), which shows which
// configuration answered, while every write keeps its answer.
const (
	optOutConfig = haConfig + "rules:\n  fluxguard:\n    optOutGroups: [\"flux:opt-out\"]\n"
	optOutHint   = "a member of flux:opt-out can set"
)

// TestReplicasUnderLoad runs the scenarios one after another on the
// package's three replicas, each under the steady load of 16 writers, and
// logs the summary of every round at the end:
//
//   - RollingUpgrade: each replica in turn gets SIGTERM, exits, and is
//     started from the other version's binary, as a Deployment rollout
//     with maxUnavailable 1 replaces Pods; 0 failed and 0 wrong writes.
//   - NodeDrain: replicas are evicted one after another as the
//     PodDisruptionBudget allows: SIGTERM, and at once a replacement
//     started; the next eviction as soon as it is ready; 0 and 0.
//   - Crash: SIGKILL of one replica, restarted a moment later; 0 wrong
//     writes, and the failed ones all within the Spreader's removal lag
//     plus the webhooks' timeout after the kill; count and window logged.
//   - ConfigurationChange: a changed configuration rolled out by
//     restarting each replica in turn, then written to every replica's
//     file at once and hot-reloaded; 0 and 0, and the change is in
//     effect everywhere afterwards.
//   - AuditLeadership: the replica that audits is killed; another takes
//     over, every PolicyReport survives unwritten, and a new finding is
//     published exactly once.
func TestReplicasUnderLoad(t *testing.T) {
	replicas.LogOnFailure(t)
	ctx := context.Background()
	writes := setupWrites(t, ctx)
	waitAnswered(t, ctx, writes)
	t.Cleanup(func() { logSummary(t) })

	t.Run("SteadyLoad", func(t *testing.T) {
		l := startLoad(writes)
		time.Sleep(10 * time.Second)
		records := l.finish(t, "steady load", 1, "no disruption")
		expectNone(t, records)
	})
	t.Run("RollingUpgrade", func(t *testing.T) { rollingUpgrade(t, ctx, writes) })
	t.Run("NodeDrain", func(t *testing.T) { nodeDrain(t, ctx, writes) })
	t.Run("Crash", func(t *testing.T) { crash(t, ctx, writes) })
	t.Run("ConfigurationChange", func(t *testing.T) { configurationChange(t, ctx, writes) })
	t.Run("AuditLeadership", func(t *testing.T) { auditLeadership(t, ctx, writes) })
}

// healthy fails the test unless every replica runs and is in the
// rotation: a scenario starts from a healthy Deployment.
func healthy(t *testing.T) {
	t.Helper()
	for _, s := range replicas.Members() {
		if !s.Running() {
			t.Fatalf("replica %s is not running: %v", s.PodName(), s.ExitErr())
		}
	}
	if err := replicas.WaitInRotation(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// expectNone fails for every failed or wrong write.
func expectNone(t *testing.T, records []record) {
	t.Helper()
	if f, w := countBad(records); f > 0 || w > 0 {
		t.Errorf("%d failed and %d wrong admissions; want none", f, w)
	}
}

// replace stops s with SIGTERM, waits until it has exited cleanly, and
// starts it again (with whatever binary and configuration file it has
// been given), then waits until it is ready and back in the rotation.
func replace(t *testing.T, ctx context.Context, l *load, s *harness.Steward, before func()) {
	t.Helper()
	l.note("SIGTERM %s", s.PodName())
	sigterm := time.Now()
	if err := s.Stop(); err != nil {
		t.Errorf("%s: %v\n--- its log (last lines, without decisions and failed probes) ---\n%s", s.PodName(), err, logTail(s, 25))
	}
	exited(t, s, time.Since(sigterm))
	l.note("%s exited %s after SIGTERM; %s; %s", s.PodName(), time.Since(sigterm).Round(time.Millisecond), connectionsEnded(s.PodName(), sigterm), drained(s))
	if before != nil {
		before()
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("starting %s again: %v", s.PodName(), err)
	}
	l.note("%s ready", s.PodName())
	if err := replicas.Spreader.WaitInRotation(10*time.Second, s.PodName()); err != nil {
		t.Fatal(err)
	}
	l.note("%s in the rotation", s.PodName())
}

func rollingUpgrade(t *testing.T, ctx context.Context, writes []write) {
	healthy(t)
	binaries := map[string]string{}
	for _, v := range []string{harness.BuildVersion, nextVersion} {
		bin, err := harness.StewardBinary(v)
		if err != nil {
			t.Fatal(err)
		}
		binaries[v] = bin
	}
	for round := 1; round <= rounds; round++ {
		version := nextVersion
		if round%2 == 0 {
			version = harness.BuildVersion
		}
		l := startLoad(writes)
		time.Sleep(settle)
		for _, s := range replicas.Members() {
			replace(t, ctx, l, s, func() { s.UseBinary(binaries[version]) })
		}
		time.Sleep(settle)
		expectNone(t, l.finish(t, "rolling upgrade", round, "to "+version))
		for _, s := range replicas.Members() {
			if n, err := s.Counter("steward_build_info", map[string]string{"version": version}); err != nil || n != 1 {
				t.Errorf("%s: steward_build_info{version=%q} = %v (%v); want the upgraded binary running", s.PodName(), version, n, err)
			}
		}
	}
}

func nodeDrain(t *testing.T, ctx context.Context, writes []write) {
	for round := 1; round <= rounds; round++ {
		healthy(t)
		l := startLoad(writes)
		time.Sleep(settle)
		var exits sync.WaitGroup
		for _, old := range replicas.Members() {
			l.note("evict %s: SIGTERM, and its replacement created", old.PodName())
			sigterm := time.Now()
			if err := old.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exits.Go(func() {
				select {
				case <-old.Done():
				case <-time.After(shutdown.GracePeriod):
					t.Errorf("%s did not exit within the %s grace period after SIGTERM: the kubelet kills it", old.PodName(), shutdown.GracePeriod)
					_ = old.Signal(syscall.SIGKILL)
					<-old.Done()
				}
				exited(t, old, time.Since(sigterm))
				l.note("%s exited %s after SIGTERM; %s; %s", old.PodName(), time.Since(sigterm).Round(time.Millisecond), connectionsEnded(old.PodName(), sigterm), drained(old))
				if err := old.ExitErr(); err != nil {
					t.Errorf("%s exited uncleanly after SIGTERM: %v\n--- its log (last lines, without decisions and failed probes) ---\n%s", old.PodName(), err, logTail(old, 25))
				}
				replicas.Remove(old)
			})
			s, err := replicas.Add(ctx)
			if err != nil {
				t.Fatalf("the replacement of %s: %v", old.PodName(), err)
			}
			l.note("replacement %s ready and in the rotation", s.PodName())
		}
		exits.Wait()
		time.Sleep(settle)
		expectNone(t, l.finish(t, "node drain", round, "3 evictions back to back"))
		if n := len(replicas.Members()); n != replicaCount {
			t.Fatalf("%d replicas after the drain, want %d", n, replicaCount)
		}
	}
}

// crashResult is what one crash cost.
type crashResult struct {
	failed int
	window time.Duration
}

func crash(t *testing.T, ctx context.Context, writes []write) {
	opts := replicas.Spreader.Options()
	// A write fails when it reaches the killed replica: in flight at the
	// kill, or on a new connection the Spreader hands it until it leaves
	// the rotation. Either fails at once (the connection is closed), or
	// at worst after the webhook's timeout (3 s at most).
	bound := opts.RemovalLag + opts.ReadinessPoll + 3*time.Second + time.Second
	var results []crashResult
	for round := 1; round <= rounds; round++ {
		healthy(t)
		l := startLoad(writes)
		time.Sleep(settle + time.Second)
		members := replicas.Members()
		victim := members[round%len(members)]
		l.note("SIGKILL %s", victim.PodName())
		kill := time.Now()
		if err := victim.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-victim.Done()
		if err := harness.Poll(ctx, 10*time.Second, func() error {
			if slices.Contains(replicas.Spreader.InRotation(), victim.PodName()) {
				return fmt.Errorf("%s is still in the rotation", victim.PodName())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		l.note("%s left the rotation", victim.PodName())
		// The kubelet restarts the container.
		time.Sleep(time.Second)
		if err := victim.Restart(ctx); err != nil {
			t.Fatalf("restarting %s: %v", victim.PodName(), err)
		}
		if err := replicas.Spreader.WaitInRotation(10*time.Second, victim.PodName()); err != nil {
			t.Fatal(err)
		}
		l.note("%s restarted, ready and in the rotation", victim.PodName())
		time.Sleep(settle)
		records := l.stop()
		res := crashResult{}
		for _, r := range records {
			if r.outcome != failed {
				continue
			}
			res.failed++
			if d := r.end.Sub(kill); d > res.window {
				res.window = d
			}
			if r.end.Before(kill) || r.end.After(kill.Add(bound)) {
				t.Errorf("a write failed %s after the kill, outside the %s bound (removal lag %s + poll %s + webhook timeout 3 s + 1 s): %s: %.300s",
					r.end.Sub(kill).Round(time.Millisecond), bound, opts.RemovalLag, opts.ReadinessPoll, writes[r.write].name, r.err)
			}
		}
		results = append(results, res)
		l.finish(t, "crash", round, fmt.Sprintf("%d failed within %s of the kill", res.failed, res.window.Round(10*time.Millisecond)))
		if _, w := countBad(records); w > 0 {
			t.Errorf("%d wrong admissions after a crash; want none", w)
		}
	}
	var worst crashResult
	total := 0
	for _, r := range results {
		total += r.failed
		worst.failed = max(worst.failed, r.failed)
		worst.window = max(worst.window, r.window)
	}
	t.Logf("crash: %d failed writes over %d kills, at most %d and within %s of a kill (removal lag %s)", total, len(results), worst.failed, worst.window.Round(10*time.Millisecond), opts.RemovalLag)
}

// inEffect checks that the fluxguard denials of writes that started
// after since all show config's setting: the configuration every replica
// answers with.
func inEffect(t *testing.T, writes []write, records []record, since time.Time, optOut bool) {
	t.Helper()
	n := 0
	for _, r := range records {
		if writes[r.write].name != fluxDenial || r.outcome != answered || r.start.Before(since) {
			continue
		}
		n++
		if strings.Contains(r.err, optOutHint) != optOut {
			t.Errorf("a denial %s after every replica had the configuration (opt-out groups set: %v) came from the other one: %.400s", r.start.Sub(since).Round(time.Millisecond), optOut, r.err)
			return
		}
	}
	if n == 0 {
		t.Errorf("no fluxguard denial after every replica had the new configuration: nothing shows it is in effect")
	}
}

func configurationChange(t *testing.T, ctx context.Context, writes []write) {
	configFor := func(optOut bool) string {
		if optOut {
			return optOutConfig
		}
		return haConfig
	}
	optOut := false
	for round := 1; round <= rounds; round++ {
		healthy(t)
		optOut = !optOut
		l := startLoad(writes)
		time.Sleep(settle)
		for _, s := range replicas.Members() {
			replace(t, ctx, l, s, func() {
				if err := s.WriteConfig(configFor(optOut)); err != nil {
					t.Fatal(err)
				}
			})
		}
		done := time.Now()
		time.Sleep(settle)
		records := l.finish(t, "config change (restarts)", round, fmt.Sprintf("optOutGroups set: %v", optOut))
		expectNone(t, records)
		inEffect(t, writes, records, done, optOut)
	}
	for round := 1; round <= rounds; round++ {
		healthy(t)
		optOut = !optOut
		members := replicas.Members()
		before := make([]float64, len(members))
		for i, s := range members {
			var err error
			if before[i], err = s.Counter("steward_config_reloads_total", map[string]string{"result": "success"}); err != nil {
				t.Fatal(err)
			}
		}
		l := startLoad(writes)
		time.Sleep(settle)
		l.note("the configuration file rewritten on every replica")
		for _, s := range members {
			if err := s.WriteConfig(configFor(optOut)); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range members {
			if err := harness.Poll(ctx, 30*time.Second, func() error {
				n, err := s.Counter("steward_config_reloads_total", map[string]string{"result": "success"})
				if err != nil || n <= before[i] {
					return fmt.Errorf("%s has not reloaded its configuration (%v reloads, %v)", s.PodName(), n, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			l.note("%s reloaded", s.PodName())
		}
		done := time.Now()
		time.Sleep(settle)
		records := l.finish(t, "config change (hot reload)", round, fmt.Sprintf("optOutGroups set: %v", optOut))
		expectNone(t, records)
		inEffect(t, writes, records, done, optOut)
	}
}

// Audit leadership: findings in these namespaces become PolicyReports
// named steward.
const (
	auditNamespaces = 5
	auditResult     = "suspendnotice/suspended/warn/Kustomization/web"
	stewardUser     = "steward-e2e-admin"
)

func auditLeadership(t *testing.T, ctx context.Context, writes []write) {
	healthy(t)
	alice := clientAs(t, "alice")
	suspend := func(ns string) {
		createNamespaces(t, ctx, ns)
		if err := alice.Create(ctx, harness.SuspendedKustomization(ns, "web")); err != nil {
			t.Fatalf("suspending a Kustomization in %s: %v", ns, err)
		}
	}
	var namespaces []string
	for i := range auditNamespaces {
		ns := fmt.Sprintf("ha-audit-%d", i)
		namespaces = append(namespaces, ns)
		suspend(ns)
	}
	reports := map[string]*unstructured.Unstructured{}
	harness.Eventually(t, 60*time.Second, func() error {
		for _, ns := range namespaces {
			r, err := reportWith(ctx, ns, auditResult)
			if err != nil {
				return err
			}
			reports[ns] = r
		}
		return nil
	})
	leader := waitLeader(t, nil)

	l := startLoad(writes)
	time.Sleep(settle)
	l.note("SIGKILL the auditing replica %s", leader.PodName())
	kill := time.Now()
	if err := leader.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.Done()
	// A new finding, once the killed replica has left the rotation (the
	// suspension's record is written by a webhook that fails open).
	harness.Eventually(t, 10*time.Second, func() error {
		if slices.Contains(replicas.Spreader.InRotation(), leader.PodName()) {
			return fmt.Errorf("%s is still in the rotation", leader.PodName())
		}
		return nil
	})
	const newNS = "ha-audit-new"
	suspend(newNS)
	l.note("a new finding in %s", newNS)
	next := waitLeader(t, leader)
	handover := time.Since(kill)
	l.note("%s audits, %s after the kill", next.PodName(), handover.Round(100*time.Millisecond))
	harness.Eventually(t, 60*time.Second, func() error {
		_, err := reportWith(ctx, newNS, auditResult)
		return err
	})
	published := time.Since(kill)
	l.note("the new finding is published")
	if err := leader.Restart(ctx); err != nil {
		t.Fatalf("restarting %s: %v", leader.PodName(), err)
	}
	if err := replicas.Spreader.WaitInRotation(10*time.Second, leader.PodName()); err != nil {
		t.Fatal(err)
	}
	l.note("%s restarted", leader.PodName())
	// Another pass, with the restarted replica back and not leading.
	time.Sleep(12 * time.Second)
	records := l.finish(t, "audit leader killed", 1, fmt.Sprintf("handover %s, new finding published %s after the kill", handover.Round(100*time.Millisecond), published.Round(100*time.Millisecond)))
	if _, w := countBad(records); w > 0 {
		t.Errorf("%d wrong admissions; want none", w)
	}
	if n := leaders(t); n != 1 {
		t.Errorf("%d replicas audit after the handover, want 1", n)
	}

	for _, ns := range namespaces {
		r, err := reportWith(ctx, ns, auditResult)
		if err != nil {
			t.Errorf("lost: %v", err)
			continue
		}
		if r.GetUID() != reports[ns].GetUID() || r.GetResourceVersion() != reports[ns].GetResourceVersion() {
			t.Errorf("PolicyReport %s/steward was written again across the handover (uid %s→%s, resourceVersion %s→%s) though its findings did not change",
				ns, reports[ns].GetUID(), r.GetUID(), reports[ns].GetResourceVersion(), r.GetResourceVersion())
		}
	}
	// Every write of these reports, as the API server recorded it: one
	// create each, and nothing else.
	events, err := env.AuditEvents(func(ev harness.AuditEvent) bool {
		return ev.Stage == "ResponseComplete" && ev.User.Username == stewardUser && ev.ObjectRef != nil &&
			ev.ObjectRef.Resource == "policyreports" && strings.HasPrefix(ev.ObjectRef.Namespace, "ha-audit-") &&
			slices.Contains([]string{"create", "update", "patch", "delete"}, ev.Verb)
	})
	if err != nil {
		t.Fatal(err)
	}
	writesOf := map[string][]string{}
	for _, ev := range events {
		code := int32(0)
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		writesOf[ev.ObjectRef.Namespace] = append(writesOf[ev.ObjectRef.Namespace], fmt.Sprintf("%s %d", ev.Verb, code))
	}
	for _, ns := range append(namespaces, newNS) {
		if got := writesOf[ns]; len(got) != 1 || got[0] != "create 201" {
			t.Errorf("PolicyReport %s/steward was written %v; want exactly one create", ns, got)
		}
	}
	t.Logf("audit: the leader was killed; %s audited %s later, the new finding was published %s after the kill; %d reports kept, none written twice",
		next.PodName(), handover.Round(100*time.Millisecond), published.Round(100*time.Millisecond), len(namespaces))
}

// leaders counts the replicas that say they audit.
func leaders(t *testing.T) int {
	t.Helper()
	n := 0
	for _, s := range replicas.Members() {
		if !s.Running() {
			continue
		}
		v, err := s.Counter("steward_audit_leader", nil)
		if err != nil {
			t.Fatalf("%s: %v", s.PodName(), err)
		}
		if v == 1 {
			n++
		}
	}
	return n
}

// waitLeader waits until exactly one running replica other than not
// audits, failing the test if two ever do at once, and returns it.
func waitLeader(t *testing.T, not *harness.Steward) *harness.Steward {
	t.Helper()
	var leader *harness.Steward
	harness.Eventually(t, 40*time.Second, func() error {
		var found []*harness.Steward
		for _, s := range replicas.Members() {
			if s == not || !s.Running() {
				continue
			}
			v, err := s.Counter("steward_audit_leader", nil)
			if err != nil {
				return err
			}
			if v == 1 {
				found = append(found, s)
			}
		}
		if len(found) > 1 {
			t.Errorf("%d replicas audit at once", len(found))
		}
		if len(found) != 1 {
			return fmt.Errorf("%d replicas audit", len(found))
		}
		leader = found[0]
		return nil
	})
	return leader
}

// reportWith reads Steward's PolicyReport in ns and checks it holds
// exactly the one result want (policy/rule/result/kind/name).
func reportWith(ctx context.Context, ns, want string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("wgpolicyk8s.io/v1alpha2")
	u.SetKind("PolicyReport")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "steward"}, u); err != nil {
		return nil, fmt.Errorf("PolicyReport %s/steward: %w", ns, err)
	}
	got := harness.ReportResults(u)
	if len(got) != 1 || got[0] != want {
		return nil, fmt.Errorf("PolicyReport %s/steward holds %v, want [%s]", ns, got, want)
	}
	return u, nil
}

// slowestExit is the longest a replica took to exit after SIGTERM;
// drains counts the replicas' drains and closedUnused the connections
// they closed without a last call (the only ones whose closing can fail
// a call the API server sends at that moment).
var slowestExit struct {
	sync.Mutex
	d                    time.Duration
	drains, closedUnused int
}

// drained reads what s logged when its webhook listener closed: how many
// connections were still open, how many then closed after a last call
// and how many it closed unused.
func drained(s *harness.Steward) string {
	lines := strings.Split(s.Log(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], `"msg":"webhook listener closed"`) {
			continue
		}
		var entry struct {
			Open   int    `json:"openConnections"`
			Last   int    `json:"closedAfterTheirLastAnswer"`
			Unused int    `json:"closingNow"`
			Waited string `json:"waited"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &entry); err != nil {
			return fmt.Sprintf("its drain's log line does not parse: %v", err)
		}
		slowestExit.Lock()
		slowestExit.drains++
		slowestExit.closedUnused += entry.Unused
		slowestExit.Unlock()
		return fmt.Sprintf("%d connections open when its listener closed, %d closed after a last call within %s, %d closed unused", entry.Open, entry.Last, entry.Waited, entry.Unused)
	}
	return "it logged no drain"
}

// exited records how long s took to exit after SIGTERM, which must be
// within the grace period: the kubelet kills it then.
func exited(t *testing.T, s *harness.Steward, took time.Duration) {
	t.Helper()
	slowestExit.Lock()
	slowestExit.d = max(slowestExit.d, took)
	slowestExit.Unlock()
	if took >= shutdown.GracePeriod {
		t.Errorf("%s exited %s after SIGTERM, after the %s grace period: the kubelet would have killed it", s.PodName(), took.Round(time.Millisecond), shutdown.GracePeriod)
	}
}

// connectionsEnded says how many of backend's connections ended after
// since, and when the last one did.
func connectionsEnded(backend string, since time.Time) string {
	n, last := 0, time.Duration(0)
	for _, c := range replicas.Spreader.ConnectionLog() {
		if c.Backend != backend || c.Closed.Before(since) {
			continue
		}
		n++
		last = max(last, c.Closed.Sub(since))
	}
	return fmt.Sprintf("%d of its connections ended after SIGTERM, the last %s after it", n, last.Round(time.Millisecond))
}

// logTail is the last n lines of s's log, without its decisions and the
// Spreader's failed readiness probes.
func logTail(s *harness.Steward, n int) string {
	var kept []string
	for _, line := range strings.Split(strings.TrimRight(s.Log(), "\n"), "\n") {
		if !strings.Contains(line, `"msg":"admission decision"`) && !strings.Contains(line, "healthz check failed") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept[max(0, len(kept)-n):], "\n")
}
