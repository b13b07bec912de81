// Package config is Steward's configuration file (--config): its types,
// their strict decoding, defaults and validation, each refusal naming the
// field; its JSON schema, which the Helm chart embeds; and the fields two
// configurations differ in, for a reload.
//
//   - config.go: the file (Config), reading it (Load, Parse) and its
//     top-level settings;
//   - rules.go: the rules section, one section per rule, each the rule's
//     own settings (RulesConfig);
//   - audit.go: the audit section (AuditConfig);
//   - schema.go, schemadocs.go: the JSON schema, reflected from the types,
//     described by their doc comments (Schema);
//   - changes.go: the fields a reloaded file changes (ChangedFields,
//     WithField).
//
// Which rules there are is the rule list's (package webhooks), which hands
// their sections over (SetRules): this package names no rule.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The header every configuration file carries.
const (
	APIVersion = "config.steward.dev/v1alpha1"
	Kind       = "StewardConfiguration"
	// DefaultBreakGlassGroup is the group whose members may override any
	// denial; the override is recorded in the audit log and in a warning.
	DefaultBreakGlassGroup = "steward:break-glass"
)

// Config is Steward's configuration file (--config).
type Config struct {
	metav1.TypeMeta `json:",inline"`
	// ExemptUsers are never denied by any rule (for example a trusted
	// automation account); their writes are recorded as bypassed.
	ExemptUsers []string `json:"exemptUsers,omitempty"`
	// ExemptGroups are like ExemptUsers, for group members.
	ExemptGroups []string `json:"exemptGroups,omitempty"`
	// BreakGlassGroup members may repeat a denied request and have it
	// allowed, with a warning and an audit annotation naming them.
	BreakGlassGroup string `json:"breakGlassGroup,omitempty"`
	// RecordEventsFor says whose refused writes get a Kubernetes Event on
	// the object: serviceAccounts (the default) or none.
	RecordEventsFor EventsFor `json:"recordEventsFor,omitempty"`
	// Audit configures the background audit, which publishes what the
	// rules find in the cluster as PolicyReports.
	Audit AuditConfig `json:"audit"`
	// Rules holds each rule's mode and settings.
	Rules RulesConfig `json:"rules"`
}

// EventsFor is whose refused writes Steward records Kubernetes Events for.
type EventsFor string

const (
	// EventsForServiceAccounts records an Event for each refusal of a
	// service account (system:serviceaccount:<namespace>:<name>): GitOps
	// agents and CI bots have no terminal to show a denial in. People see
	// the denial in their terminal and get none.
	EventsForServiceAccounts EventsFor = "serviceAccounts"
	// EventsForNone records no Events.
	EventsForNone EventsFor = "none"
)

// EventsForValues are every EventsFor.
func EventsForValues() []EventsFor { return []EventsFor{EventsForServiceAccounts, EventsForNone} }

// Defaults is the configuration used when no file is given.
func Defaults() Config {
	c := Config{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	c.Default()
	return c
}

// Default fills every unset field with its default.
func (c *Config) Default() {
	if c.BreakGlassGroup == "" {
		c.BreakGlassGroup = DefaultBreakGlassGroup
	}
	if c.RecordEventsFor == "" {
		c.RecordEventsFor = EventsForServiceAccounts
	}
	c.Audit.Default()
	c.Rules.Default()
}

// Validate reports every invalid field, by path.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{APIVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}
	if !slices.Contains(EventsForValues(), c.RecordEventsFor) {
		var names []string
		for _, v := range EventsForValues() {
			names = append(names, string(v))
		}
		errs = append(errs, field.NotSupported(field.NewPath("recordEventsFor"), c.RecordEventsFor, names))
	}
	errs = append(errs, c.Audit.Validate(field.NewPath("audit"))...)
	return append(errs, c.Rules.Validate(field.NewPath("rules"))...)
}

// Load reads, defaults and validates a configuration file. Unknown
// fields are errors, so a typo never silently falls back to a default.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a configuration document; source names it in errors.
func Parse(data []byte, source string) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, fmt.Errorf("configuration %s is empty: it needs at least apiVersion: %s and kind: %s", source, APIVersion, Kind)
	}
	// Decode case-sensitively and strictly: "fluxversion" or a misspelt key
	// is an error naming the full path, never a silent default.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", source, err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, &c)
	if err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", source, err)
	}
	strict = append(strict, strictRulesErrors(js)...)
	if len(strict) > 0 {
		return Config{}, fmt.Errorf("configuration %s: %w", source, errors.Join(strict...))
	}
	c.Default()
	if errs := c.Validate(); len(errs) > 0 {
		return Config{}, fmt.Errorf("configuration %s is invalid: %w", source, errs.ToAggregate())
	}
	return c, nil
}
