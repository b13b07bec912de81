package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// How `steward audit` prints one pass's findings (-o text, json,
// policyreport or openreports).

// jsonReport is the JSON output of `steward audit -o json` (WriteJSON).
type jsonReport struct {
	// Rules are the rules asked, in Steward's order.
	Rules    []string      `json:"rules"`
	Findings []jsonFinding `json:"findings"`
	Summary  jsonSummary   `json:"summary"`
}

// jsonFinding is one finding, in a PolicyReport result's words: policy
// is the rule, rule is the check.
type jsonFinding struct {
	Policy     string            `json:"policy"`
	Rule       string            `json:"rule"`
	Result     string            `json:"result"`
	Resource   jsonResource      `json:"resource"`
	Message    string            `json:"message"`
	Properties map[string]string `json:"properties,omitempty"`
}

type jsonResource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

type jsonSummary struct {
	Pass     int `json:"pass"`
	Fail     int `json:"fail"`
	Warn     int `json:"warn"`
	ExitCode int `json:"exitCode"`
}

// WriteJSON prints one pass's findings as `steward audit -o json` does:
// one document of the rules asked, the findings in report order (results,
// failures first) and a summary with code, the command's exit code. Its
// fields are stable: new ones may be added, existing ones keep their
// meaning.
func WriteJSON(w io.Writer, pass Pass, results []Result, code int) error {
	r := jsonReport{Rules: []string{}, Findings: []jsonFinding{}, Summary: jsonSummary{ExitCode: code}}
	for _, a := range pass {
		r.Rules = append(r.Rules, a.Rule)
	}
	for _, res := range results {
		var o jsonResource
		if len(res.Resources) > 0 {
			ref := res.Resources[0]
			o = jsonResource{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: string(ref.UID)}
		}
		r.Findings = append(r.Findings, jsonFinding{Policy: res.Policy, Rule: res.Rule, Result: res.Result, Resource: o, Message: res.Message, Properties: res.Properties})
		switch res.Result {
		case "pass":
			r.Summary.Pass++
		case "fail":
			r.Summary.Fail++
		case "warn":
			r.Summary.Warn++
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteReports prints the reports of api the background audit would
// write for results, as YAML documents: cluster-scoped first, then by
// namespace.
func WriteReports(w io.Writer, api ReportAPI, results []Result) error {
	reports := Reports(results, MaxResults)
	for _, ns := range slices.Sorted(maps.Keys(reports)) {
		data, err := yaml.Marshal(ReportObject(api, reports[ns]).Object)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, "---\n"+string(data)); err != nil {
			return err
		}
	}
	return nil
}

// WriteText prints the findings by namespace (cluster-scoped objects
// first), then by rule, each line its verdict, check, object and message.
func WriteText(w io.Writer, pass Pass, results []Result) error {
	byNamespace := map[string][]Result{}
	counts := map[string]int{}
	for _, r := range results {
		ns := ""
		if len(r.Resources) > 0 {
			ns = r.Resources[0].Namespace
		}
		byNamespace[ns] = append(byNamespace[ns], r)
		counts[r.Result]++
	}
	var b strings.Builder
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		if ns == "" {
			b.WriteString("cluster-scoped:\n")
		} else {
			fmt.Fprintf(&b, "namespace %s:\n", ns)
		}
		group := byNamespace[ns]
		slices.SortStableFunc(group, func(a, b Result) int { return strings.Compare(a.Policy, b.Policy) })
		policy := ""
		for _, r := range group {
			if r.Policy != policy {
				policy = r.Policy
				fmt.Fprintf(&b, "  %s:\n", policy)
			}
			obj := ""
			if len(r.Resources) > 0 {
				ref := r.Resources[0]
				obj = ref.Kind + " " + ref.Name
			}
			fmt.Fprintf(&b, "    %-4s  %s  %s: %s", r.Result, r.Rule, obj, r.Message)
			if len(r.Properties) > 0 {
				var props []string
				for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
					props = append(props, k+"="+r.Properties[k])
				}
				fmt.Fprintf(&b, " (%s)", strings.Join(props, ", "))
			}
			b.WriteString("\n")
		}
	}
	var asked []string
	for _, a := range pass {
		asked = append(asked, a.Rule)
	}
	if len(results) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d findings: %d fail, %d warn, %d pass (rules asked: %s)\n",
		len(results), counts["fail"], counts["warn"], counts["pass"], strings.Join(asked, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}
