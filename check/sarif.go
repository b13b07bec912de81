package check

import (
	"encoding/json"
	"net/url"
	"path/filepath"
)

// SARIF 2.1.0, the format GitHub code scanning (upload-sarif) and other
// code review tools read. Only what they use is written; a test validates
// the output against the OASIS schema in testdata.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	Name                 string       `json:"name"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool `json:"executionSuccessful"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifLocation struct {
	PhysicalLocation struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *sarifRegion `json:"region,omitempty"`
	} `json:"physicalLocation"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// sarifRules are the rules results point at, by index; the ids are
// stable, as code scanning tracks alerts by them.
var sarifRules = []struct{ id, name, status, level, text string }{
	{"removed-api-version", "RemovedAPIVersion", findRemoved, "error", "A Flux object uses an API version the target Flux release no longer serves"},
	{"deprecated-api-version", "DeprecatedAPIVersion", findDeprecated, "warning", "A Flux object uses a deprecated API version that a later Flux release removes"},
	{"unknown-api-version", "UnknownAPIVersion", findUnknown, "error", "A Flux object uses an API version no Flux release serves"},
	{"malformed-input", "MalformedInput", "", "error", "A file or YAML document could not be read or parsed, so it was not checked"},
}

// writeSARIF prints one SARIF run: the findings, then the input problems.
func (c *checker) writeSARIF() error {
	driver := sarifDriver{Name: "steward", Version: c.opts.Version, InformationURI: "https://github.com/stewardhq/steward"}
	index := map[string]int{}
	for i, r := range sarifRules {
		rule := sarifRule{ID: r.id, Name: r.name, ShortDescription: sarifMessage{r.text}}
		rule.DefaultConfiguration.Level = r.level
		driver.Rules = append(driver.Rules, rule)
		index[r.status] = i
	}
	run := sarifRun{Tool: sarifTool{driver}, Invocations: []sarifInvocation{{len(c.problems) == 0}}, Results: []sarifResult{}}
	for _, f := range c.findings {
		i := index[f.status]
		run.Results = append(run.Results, sarifResult{
			RuleID: sarifRules[i].id, RuleIndex: i, Level: c.level(f),
			Message:   sarifMessage{f.object() + " (" + f.position() + "): " + f.message},
			Locations: sarifLocations(f.file, f.line),
		})
	}
	for _, p := range c.problems {
		i := index[""]
		run.Results = append(run.Results, sarifResult{
			RuleID: sarifRules[i].id, RuleIndex: i, Level: "error",
			Message: sarifMessage{p.String()}, Locations: sarifLocations(p.file, p.line),
		})
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// sarifLocations locates a result in a file by a relative URI, which code
// scanning resolves against the repository root; standard input has no
// location, and a line of 0 (unknown) no region.
func sarifLocations(file string, line int) []sarifLocation {
	if file == stdinName || file == "" {
		return nil
	}
	var l sarifLocation
	l.PhysicalLocation.ArtifactLocation.URI = (&url.URL{Path: filepath.ToSlash(file)}).String()
	if line > 0 {
		l.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	return []sarifLocation{l}
}
