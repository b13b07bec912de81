// Package apimigration is the apimigration rule: it annotates Flux objects
// written through deprecated API versions, so their controllers reconcile
// them once and rewrite status in the current format, warns the writer, and
// refuses versions the target Flux release no longer serves. `steward
// check` runs the same decision offline over YAML files.
package apimigration

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
)

// Name is the rule's name: its config key, metric label and message prefix.
const Name = "apimigration"

// Rule is the apimigration admission handler.
type Rule struct {
	// pin is the target the configuration names; nil when the rule follows
	// the Flux release installed in the cluster.
	pin *Target
	// view is what the rule knows of the cluster. It is made by New and
	// handed on to every rule a reloaded configuration builds in this one's
	// place (Inherit), so the loop that follows the cluster, the readiness
	// check and the metric, all set up once, serve the rule in use.
	view *view
	// now is the clock for fresh marks; tests replace it.
	now func() time.Time
}

// New builds the rule from its (defaulted, validated) configuration. It
// needs no cluster access: until SetupWithManager, a configuration that
// pins no release targets DefaultFluxVersion.
func New(c Config) *Rule {
	r := &Rule{now: time.Now, view: newView()}
	if c.Pinned() {
		r.pin = &Target{Release: c.Target(), Source: SourceConfig}
	}
	r.view.inUse.Store(r)
	return r
}

// Target is the release the rule decides against now, and its source.
func (r *Rule) Target() Target {
	if r.pin != nil {
		return *r.pin
	}
	return *r.view.cluster.Load()
}

// Inherit makes r, built from a reloaded configuration, take over the
// running rule's view of the cluster (rule.Inheritor): a target pinned or
// unpinned by the new configuration applies at once, and an unpinned one
// is the release the running rule's loop has followed.
func (r *Rule) Inherit(running rule.Rule) error {
	old, ok := running.(*Rule)
	if !ok {
		return fmt.Errorf("apimigration cannot take over from a %T", running)
	}
	before := old.Target()
	r.view = old.view
	r.view.inUse.Store(r)
	if after := r.Target(); after != before {
		r.view.log.Info("target Flux release changed", "fluxVersion", after.Name(), "source", string(after.Source),
			"previousFluxVersion", before.Name(), "previousSource", string(before.Source))
	}
	return nil
}

var _ rule.Inheritor = (*Rule)(nil)

// Handle answers one admission request. See the package README for what is
// decided and why; the decision itself is Classify, shared with `steward
// check`.
func (r *Rule) Handle(_ context.Context, req *rule.Request) admission.Response {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		return admission.Allowed("")
	}
	// requestKind is the version the client wrote through. With every
	// version registered it equals kind; it would differ only if the API
	// server converted the request to a version matched by the rules
	// (matchPolicy Equivalent), and the client's version is what matters.
	gvk := req.Kind
	if req.RequestKind != nil {
		gvk = *req.RequestKind
	}
	t := r.Target()
	f := Classify(gvk.Group, gvk.Kind, gvk.Version, t.Release)
	f.TargetName = t.Name()
	if f.Status == Untouched {
		return admission.Allowed("")
	}
	if f.Status == RemovedVersion {
		return admission.Denied(f.Refusal(describe(req, gvk.Kind)))
	}
	return r.mark(req, f)
}

// mark allows a write through a deprecated version, with the warning and
// whatever annotations plan asks for. It writes the patch operations
// directly.
func (r *Rule) mark(req *rule.Request, f Finding) admission.Response {
	obj, err := readObject(req.View())
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	var old fluxObject
	update := req.Operation == admissionv1.Update
	if update {
		if old, err = readObject(req.OldView()); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the stored object: %w", err))
		}
	}
	var set map[string]string
	if !obj.view.Deleting() {
		set = plan(f.From(), obj.annotations, old.annotations, update, func() bool { return sameSpec(&old, &obj) }, r.now().UTC().Format(time.RFC3339Nano))
	}
	warning := f.Warning()
	resp := admission.Allowed(warning)
	if len(set) > 0 {
		resp.Patches = annotationPatch(&obj, set)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	return resp.WithWarnings(warning)
}

// describe names the object and the Flux object that applied it, for the
// refusal message. It reads what it can; a request whose object does not
// read is still refused, by the request's own name.
func describe(req *rule.Request, kind string) (object, source string) {
	ns, name := req.Namespace, req.Name
	if v := req.View(); v.ServerForm() {
		if name == "" {
			name = v.Name()
		}
		if name == "" && v.GenerateName() != "" {
			name = v.GenerateName() + "*"
		}
		if ns == "" {
			ns = v.Namespace()
		}
		source = appliedBy(v.Label)
	}
	return kind + " " + ns + "/" + name, source
}

// appliedBy names the Flux object that applied an object, from the
// ownership labels kustomize-controller and helm-controller set.
func appliedBy(label func(key string) (string, bool)) string {
	for _, owner := range []struct{ kind, group string }{
		{"Kustomization", KustomizeGroup},
		{"HelmRelease", HelmGroup},
	} {
		name, _ := label(owner.group + "/name")
		ns, _ := label(owner.group + "/namespace")
		if name != "" {
			return owner.kind + " " + ns + "/" + name
		}
	}
	return ""
}
