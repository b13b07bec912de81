package webhookserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/stewardhq/steward/webhooks"
	"github.com/stewardhq/steward/webhooks/config"
	"github.com/stewardhq/steward/webhooks/setup"
)

// configReloadInterval is how often the configuration file is read again.
// A ConfigMap volume changes when the kubelet points the volume's ..data
// symlink at a new directory, about a minute after the ConfigMap does;
// comparing the file's content every few seconds sees that whatever the
// path's symlinks, where a watch on the file would keep watching the old
// directory. Reading a few KiB every ten seconds costs nothing.
const configReloadInterval = 10 * time.Second

// configReloader reads the configuration file again whenever its content
// changes. A valid configuration takes effect at once for everything that
// can change while Steward runs: each rule's mode and settings, the exempt
// users and groups, the break-glass group and whether Events are recorded.
// What changes the registration (webhook entries, matchConditions, RBAC)
// is logged as needing the manifests rendered for the new file, and what
// is fixed at start-up (a rule turned on, the webhook rules Steward keeps
// in sync) as needing a restart. An invalid file is refused, with a log
// line naming the field, an Event on Steward's Pod and the reload metrics,
// and the last good configuration stays in effect.
type configReloader struct {
	path    string
	served  *servedRules
	log     logr.Logger
	metrics *reloadMetrics
	events  *configEvents // nil: no Events
	now     func() time.Time

	mu sync.Mutex
	// startup is the configuration Steward started with: routes, caches,
	// the Events recorder and the webhook rules syncer follow it until a
	// restart.
	startup config.Config
	// current is the last good configuration, in effect.
	current config.Config
	// seen is the hash of the content last read, good or bad, so a file is
	// judged once, not on every tick.
	seen [sha256.Size]byte
}

// newConfigReloader watches path, whose content data was parsed into cfg
// at start-up.
func newConfigReloader(path string, data []byte, cfg config.Config, served *servedRules, metrics *reloadMetrics, events *configEvents, log logr.Logger) *configReloader {
	r := &configReloader{path: path, served: served, log: log, metrics: metrics, events: events, now: time.Now,
		startup: cfg, current: cfg, seen: sha256.Sum256(data)}
	metrics.loaded(r.now())
	return r
}

// Start reloads the file until ctx ends; it is a manager Runnable.
func (r *configReloader) Start(ctx context.Context) error {
	return pollFile(ctx, configReloadInterval, r.reload)
}

// NeedLeaderElection is false: every replica serves its own requests.
func (r *configReloader) NeedLeaderElection() bool { return false }

// reload reads the file and, when its content changed, applies or refuses
// it.
func (r *configReloader) reload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.path)
	if err != nil {
		// Judged once per distinct error, like a file's content.
		if sum := sha256.Sum256([]byte("error: " + err.Error())); sum != r.seen {
			r.seen = sum
			r.refuse(fmt.Errorf("reading configuration: %w", err))
		}
		return
	}
	sum := sha256.Sum256(data)
	if sum == r.seen {
		return
	}
	r.seen = sum
	cfg, err := config.Parse(data, r.path, webhooks.Sections())
	if err != nil {
		r.refuse(err)
		return
	}
	if err := r.apply(cfg); err != nil {
		r.refuse(err)
	}
}

// refuse keeps the last good configuration and says why in the log, an
// Event and the metrics.
func (r *configReloader) refuse(err error) {
	r.metrics.failed()
	r.log.Error(err, "configuration refused: keeping the last good configuration", "file", r.path)
	r.eventsUnder(r.current).rejected(r.path, err)
}

// eventsUnder is where Events are recorded while cfg is in effect: nowhere
// when it records none.
func (r *configReloader) eventsUnder(cfg config.Config) *configEvents {
	if cfg.RecordEventsFor == config.EventsForNone {
		return nil
	}
	return r.events
}

// apply makes cfg the configuration in effect.
func (r *configReloader) apply(cfg config.Config) error {
	next, err := webhooks.Successors(cfg, r.served.rules)
	if err != nil {
		return err
	}
	changed := config.ChangedFields(r.current, cfg)
	registration := registrationFields(r.current, cfg, changed)
	restart := r.restartFields(cfg)
	r.served.swap(cfg, next)
	r.current = cfg
	r.metrics.reloaded(r.now())

	live := slices.DeleteFunc(slices.Clone(changed), func(f string) bool { return slices.Contains(restart, f) })
	r.log.Info("configuration reloaded", "file", r.path, "changed", changed)
	for _, c := range next {
		if c.Rule == nil && slices.Contains(changed, "rules."+c.Name+".mode") {
			r.log.Info("rule turned off: Steward now allows every request its webhooks send, unjudged, until the manifests rendered for the new configuration remove them",
				"rule", c.Name)
		}
	}
	if len(registration) > 0 {
		r.log.Info("the new configuration changes Steward's registration (webhook entries, matchConditions or RBAC): render the manifests for it (steward manifests --config FILE) and apply them; until then the API server calls Steward as the installed manifests say",
			"fields", registration)
	}
	if len(restart) > 0 {
		r.log.Info("settings fixed at start-up changed: they take effect when Steward restarts (with manifests rendered for the new configuration)",
			"fields", restart)
	}
	r.eventsUnder(cfg).reloaded(r.path, live, registration, restart)
	return nil
}

// registrationFields are the changed fields that alone change what the
// manifests rendered for the configuration register or grant.
func registrationFields(old, cfg config.Config, changed []string) []string {
	before := setup.RegistrationOf(old)
	var out []string
	for _, f := range changed {
		one, err := config.WithField(old, cfg, f, webhooks.Sections())
		if err != nil || !setup.RegistrationOf(one).Equal(before) {
			out = append(out, f)
		}
	}
	return out
}

// restartFields are the fields of cfg that differ from the start-up
// configuration in what only a restart applies: a rule turned on that was
// off at start-up has no route nor caches; the Events recorder exists only
// if Steward started recording Events; the webhook rules syncer keeps the
// configurations it started with.
func (r *configReloader) restartFields(cfg config.Config) []string {
	var out []string
	served := map[string]bool{}
	for _, c := range r.served.rules {
		served[c.Name] = true
	}
	for _, c := range webhooks.Rules(cfg) {
		if !served[c.Name] {
			out = append(out, "rules."+c.Name+".mode")
		}
	}
	if cfg.RecordEventsFor != config.EventsForNone && r.startup.RecordEventsFor == config.EventsForNone {
		out = append(out, "recordEventsFor")
	}
	synced := func(c config.Config, name string) map[string]string {
		return setup.RegistrationOf(c).Rules[name].Synced
	}
	for _, f := range config.ChangedFields(r.startup, cfg) {
		name, _, ok := strings.Cut(strings.TrimPrefix(f, "rules."), ".")
		if !ok || !strings.HasPrefix(f, "rules.") || !served[name] || strings.HasSuffix(f, ".mode") {
			continue
		}
		one, err := config.WithField(r.startup, cfg, f, webhooks.Sections())
		if err != nil || !maps.Equal(synced(one, name), synced(r.startup, name)) {
			out = append(out, f)
		}
	}
	return out
}
