// Command registrations measures what Steward's webhook registrations cost
// the API server on writes they let by: the CPU time kube-apiserver's own
// admission code (k8s.io/apiserver's generic.Webhook.ShouldCallHook, the
// same code and version as the API server the e2e tests run) spends per
// write deciding, entry by entry, whether to call Steward. Namespace and
// object selectors, rules and the CEL match conditions all run as in the
// API server; nothing is sent anywhere.
//
// Each write is timed under three configurations in paired rounds: no
// registrations, Steward's (manifests/base/webhooks.yaml), and Steward's
// without argocdguard's two entries, whose match conditions the API server
// evaluates on every write (Argo CD marks what it manages with an
// annotation, which no objectSelector reads); -also adds a fourth, rendered
// another way (the chart with docs/examples/argocd-annotation-label-values.yaml,
// whose objectSelector passes unlabelled objects first). It prints a
// Markdown table.
// `make bench-registrations` runs it.
//
// It is a module of its own so that Steward's build and tests do not
// compile the API server's admission packages.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "registrations: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("registrations", flag.ContinueOnError)
	manifest := fs.String("manifest", "../../manifests/base/webhooks.yaml", "the rendered webhook configurations")
	rounds := fs.Int("rounds", 15, "paired rounds; each times every configuration, in alternating order")
	writes := fs.Int("writes", 20000, "writes per configuration and round")
	also := fs.String("also", "", "webhook configurations rendered another way (the chart with docs/examples/argocd-annotation-label-values.yaml, say), timed as a fourth configuration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || *writes < 1 {
		return errors.New("-rounds and -writes must be positive")
	}
	data, err := os.ReadFile(*manifest)
	if err != nil {
		return err
	}
	steward, err := parseConfigurations(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *manifest, err)
	}
	withoutArgo := slices.DeleteFunc(slices.Clone(steward), isArgoCDObjectEntry)
	if len(withoutArgo) == len(steward) {
		return fmt.Errorf("%s: no argocdguard object entries (%v)", *manifest, argoCDObjectEntries)
	}
	configs := []configuration{{"none", "no registrations", nil}, {"steward", "Steward's", steward}, {"no-argocd", "Steward's without " + strings.Join(argoCDObjectEntries, " and "), withoutArgo}}
	if *also != "" {
		data, err := os.ReadFile(*also)
		if err != nil {
			return err
		}
		hooks, err := parseConfigurations(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *also, err)
		}
		configs = append(configs, configuration{"also", "Steward's, as " + filepath.Base(*also) + " has them", hooks})
	}

	m, err := newMatcher()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "CPU time per write (µs) kube-apiserver %s spends deciding whether to call Steward, %s: median of %d paired rounds of %d writes (range)\n\n",
		apiserverVersion(), runtime.Version(), *rounds, *writes)
	header, rule := "| write |", "|---|"
	for _, c := range configs {
		header, rule = header+" "+c.title+" |", rule+"---:|"
	}
	fmt.Fprintf(out, "%s entries whose match conditions run | argocdguard's share | allocated per write: every configuration but the first |\n%s---:|---:|---:|\n", header, rule)
	for _, w := range writeKinds() {
		r, err := m.measure(w, configs, *rounds, *writes)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		var cells, reaching, allocated []string
		for i, c := range configs {
			cells = append(cells, r.cell(i))
			if i > 0 {
				reaching = append(reaching, fmt.Sprintf("%d of %d", m.reachingConditions(w, c.hooks), len(c.hooks)))
				allocated = append(allocated, fmt.Sprintf("%d B", r.allocated[i]))
			}
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", w.name, strings.Join(cells, " | "), strings.Join(reaching, ", "), r.share(1, 2), strings.Join(allocated, ", "))
	}
	return nil
}

// argoCDObjectEntries are argocdguard's entries for every object (people's
// and service accounts'), which match conditions alone narrow.
var argoCDObjectEntries = []string{"argocdguard.steward.dev", "argocdguard-serviceaccounts.steward.dev"}

func isArgoCDObjectEntry(h webhook.WebhookAccessor) bool {
	return slices.Contains(argoCDObjectEntries, h.GetName())
}

type configuration struct {
	name, title string
	hooks       []webhook.WebhookAccessor
}

// parseConfigurations reads every entry of the Validating and Mutating
// webhook configurations in a multi-document YAML file.
func parseConfigurations(data []byte) ([]webhook.WebhookAccessor, error) {
	var hooks []webhook.WebhookAccessor
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, err
		}
		switch meta.Kind {
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				return nil, err
			}
			for i := range c.Webhooks {
				hooks = append(hooks, webhook.NewValidatingWebhookAccessor(c.Webhooks[i].Name, c.Name, &c.Webhooks[i]))
			}
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				return nil, err
			}
			for i := range c.Webhooks {
				hooks = append(hooks, webhook.NewMutatingWebhookAccessor(c.Webhooks[i].Name, c.Name, &c.Webhooks[i]))
			}
		}
	}
	if len(hooks) == 0 {
		return nil, errors.New("no webhook configuration entries")
	}
	return hooks, nil
}

// apiserverVersion is the version of k8s.io/apiserver this is built with.
func apiserverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/apiserver" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
