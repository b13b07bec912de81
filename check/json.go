package check

import (
	"encoding/json"
)

// checkReport is the JSON output of `steward check -o json`. Its fields
// are a stable interface for scripts: new fields may be added, existing
// ones keep their names and meaning (docs/check.md, "Checking a GitOps
// repository in CI").
type checkReport struct {
	Target      string        `json:"target"`
	Findings    []jsonFinding `json:"findings"`
	InputErrors []jsonProblem `json:"inputErrors"`
	Summary     checkSummary  `json:"summary"`
}

type jsonFinding struct {
	File        string `json:"file"`
	Line        int    `json:"line"`
	Document    int    `json:"document"`
	Items       []int  `json:"items,omitempty"`
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Namespace   string `json:"namespace,omitempty"`
	Finding     string `json:"finding"`
	Level       string `json:"level"`
	Message     string `json:"message"`
	ReplaceWith string `json:"replaceWith"`
}

type jsonProblem struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Document int    `json:"document,omitempty"`
	Items    []int  `json:"items,omitempty"`
	Message  string `json:"message"`
}

type checkSummary struct {
	Files           int `json:"files"`
	Objects         int `json:"objects"`
	Removed         int `json:"removed"`
	Deprecated      int `json:"deprecated"`
	UnknownVersions int `json:"unknownVersions"`
	InputErrors     int `json:"inputErrors"`
	ExitCode        int `json:"exitCode"`
}

// writeJSON prints the whole check as one JSON document.
func (c *checker) writeJSON(code int) error {
	r := checkReport{
		Target:      c.opts.Target.String(),
		Findings:    []jsonFinding{},
		InputErrors: []jsonProblem{},
		Summary: checkSummary{
			Files: c.files, Objects: c.objects,
			Removed: c.count(findRemoved), Deprecated: c.count(findDeprecated), UnknownVersions: c.count(findUnknown),
			InputErrors: len(c.problems), ExitCode: code,
		},
	}
	for _, f := range c.findings {
		r.Findings = append(r.Findings, jsonFinding{
			File: f.file, Line: f.line, Document: f.document, Items: f.item,
			APIVersion: f.apiVersion, Kind: f.manifest.kind, Name: f.name, Namespace: f.ns,
			Finding: f.status, Level: c.level(f), Message: f.message, ReplaceWith: f.replaceWith,
		})
	}
	for _, p := range c.problems {
		r.InputErrors = append(r.InputErrors, jsonProblem{File: p.file, Line: p.line, Document: p.document, Items: p.item, Message: p.msg})
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
