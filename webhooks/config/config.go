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
// Which rules there are is the rule list's (package webhooks): every
// function that reads, defaults, validates or describes a file is handed
// their sections (webhooks.Sections()), and this package names no rule
// and keeps no state.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

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

// Defaults is the configuration used when no file is given, with a
// section for each of rules.
func Defaults(rules Sections) Config {
	c := Config{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	c.Default(rules)
	return c
}

// Default fills every unset field with its default, and adds the
// sections of rules the file left out.
func (c *Config) Default(rules Sections) {
	if c.BreakGlassGroup == "" {
		c.BreakGlassGroup = DefaultBreakGlassGroup
	}
	if c.RecordEventsFor == "" {
		c.RecordEventsFor = EventsForServiceAccounts
	}
	c.Audit.Default()
	c.Rules.Default(rules)
}

// Validate reports every invalid field, by path; rules are the sections
// the rules section may have.
func (c *Config) Validate(rules Sections) field.ErrorList {
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
	errs = append(errs, c.Audit.Validate(field.NewPath("audit"), rules)...)
	return append(errs, c.Rules.Validate(field.NewPath("rules"), rules)...)
}

// Load reads, defaults and validates a configuration file whose rules
// section has rules' sections. Unknown fields are errors, so a typo never
// silently falls back to a default.
func Load(path string, rules Sections) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	return Parse(data, path, rules)
}

// Parse decodes, defaults and validates a configuration document (YAML or
// JSON) whose rules section has rules' sections; source names it in
// errors.
func Parse(data []byte, source string, rules Sections) (Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, fmt.Errorf("configuration %s is empty: it needs at least apiVersion: %s and kind: %s", source, APIVersion, Kind)
	}
	// Decode case-sensitively and strictly: "fluxversion" or a misspelt key
	// is an error naming the full path, never a silent default.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", source, err)
	}
	c, err := Decode(js, rules)
	if err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", source, err)
	}
	if errs := c.Validate(rules); len(errs) > 0 {
		return Config{}, fmt.Errorf("configuration %s is invalid: %w", source, errs.ToAggregate())
	}
	return c, nil
}

// Decode decodes a configuration's JSON strictly (every unknown or
// duplicate key is an error naming its path) and defaults it, without
// validating it: Parse validates what it decodes.
func Decode(js []byte, rules Sections) (Config, error) {
	if len(rules) == 0 {
		return Config{}, errNoSections
	}
	// file is the Config as it is decoded: its rules section is read with
	// the sections handed over. The type is named Config so that a type
	// error names the field as decoding a Config would (fileError).
	type file = Config
	type Config struct {
		*file
		Rules rulesReader `json:"rules"`
	}
	var c file
	strict, err := sigsjson.UnmarshalStrict(js, &Config{file: &c, Rules: rulesReader{Into: &c.Rules, Rules: rules}})
	if err != nil {
		return file{}, fileError(err)
	}
	if strict = append(strict, strictRulesErrors(js, rules)...); len(strict) > 0 {
		return file{}, errors.Join(strict...)
	}
	c.Default(rules)
	return c, nil
}

// fileError names a type error's field by its path in the file, less the
// embedded field Decode reads the file through.
func fileError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	fixed := *te
	fixed.Field = strings.TrimPrefix(fixed.Field, "file.")
	return &fixed
}
