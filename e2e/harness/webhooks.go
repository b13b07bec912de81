package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/manifests"
)

// WebhookConfigurationName is the name of Steward's
// ValidatingWebhookConfiguration and MutatingWebhookConfiguration.
const WebhookConfigurationName = "steward"

// Webhooks are the webhook configurations rendered into
// manifests/base/webhooks.yaml. Either may be nil when the file has none.
type Webhooks struct {
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
}

// RenderedWebhooks reads manifests/base/webhooks.yaml, the webhook
// configurations `steward manifests` renders and the install ships.
func RenderedWebhooks() (Webhooks, error) {
	path, err := WebhooksFile()
	if err != nil {
		return Webhooks{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Webhooks{}, fmt.Errorf("reading the rendered webhook configurations (run `make generate`): %w", err)
	}
	return parseWebhooks(path, data)
}

// WebhooksFor renders the webhook configurations for Steward running in
// namespace, as `steward manifests --namespace` does; for the default
// namespace they are the committed ones (RenderedWebhooks).
func WebhooksFor(namespace string) (Webhooks, error) {
	if namespace == StewardNamespace {
		return RenderedWebhooks()
	}
	files, err := manifests.Render(manifests.Options{Namespace: namespace})
	if err != nil {
		return Webhooks{}, err
	}
	const path = "base/webhooks.yaml"
	return parseWebhooks(path, files[path])
}

// ParseWebhooks reads the webhook configurations among the documents of
// rendered YAML (a webhooks.yaml, or all `helm template` prints); source
// names it in errors.
func ParseWebhooks(source string, data []byte) (Webhooks, error) {
	return parseWebhooks(source, data)
}

// parseWebhooks reads the configurations of a rendered webhooks.yaml.
func parseWebhooks(path string, data []byte) (Webhooks, error) {
	docs, err := splitYAML(data)
	if err != nil {
		return Webhooks{}, fmt.Errorf("%s: %w", path, err)
	}
	var w Webhooks
	for _, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return Webhooks{}, fmt.Errorf("%s: %w", path, err)
		}
		switch meta.Kind {
		case "ValidatingWebhookConfiguration":
			w.Validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, w.Validating); err != nil {
				return Webhooks{}, fmt.Errorf("%s: %w", path, err)
			}
		case "MutatingWebhookConfiguration":
			w.Mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, w.Mutating); err != nil {
				return Webhooks{}, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	if w.Validating == nil && w.Mutating == nil {
		return Webhooks{}, fmt.Errorf("%s holds no webhook configuration", path)
	}
	return w, nil
}

// endpoint is where, and with which CA, the API server reaches Steward.
type endpoint struct {
	host     string
	port     int
	caBundle []byte // nil when Steward injects its own CA
}

// clientConfig points a rendered clientConfig (a Service) at the endpoint,
// keeping its path.
func (ep endpoint) clientConfig(rendered admissionregistrationv1.WebhookClientConfig) (admissionregistrationv1.WebhookClientConfig, error) {
	path := ""
	switch {
	case rendered.Service != nil:
		if rendered.Service.Path != nil {
			path = *rendered.Service.Path
		}
	case rendered.URL != nil:
		u, err := url.Parse(*rendered.URL)
		if err != nil {
			return admissionregistrationv1.WebhookClientConfig{}, err
		}
		path = u.Path
	}
	u := fmt.Sprintf("https://%s:%d%s", ep.host, ep.port, path)
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ep.caBundle}, nil
}

// forEndpoint returns copies of the rendered configurations whose
// clientConfigs point at ep; everything else is kept exactly.
func (w Webhooks) forEndpoint(ep endpoint) (Webhooks, error) {
	var out Webhooks
	if w.Validating != nil {
		out.Validating = w.Validating.DeepCopy()
		for i := range out.Validating.Webhooks {
			cc, err := ep.clientConfig(out.Validating.Webhooks[i].ClientConfig)
			if err != nil {
				return Webhooks{}, fmt.Errorf("webhook %s: %w", out.Validating.Webhooks[i].Name, err)
			}
			out.Validating.Webhooks[i].ClientConfig = cc
		}
	}
	if w.Mutating != nil {
		out.Mutating = w.Mutating.DeepCopy()
		for i := range out.Mutating.Webhooks {
			cc, err := ep.clientConfig(out.Mutating.Webhooks[i].ClientConfig)
			if err != nil {
				return Webhooks{}, fmt.Errorf("webhook %s: %w", out.Mutating.Webhooks[i].Name, err)
			}
			out.Mutating.Webhooks[i].ClientConfig = cc
		}
	}
	return out, nil
}

// PointedAt returns copies of the configurations, named name, whose every
// webhook is sent to https://host:port at its own path and verified with
// caBundle: the same rules, selectors, match conditions, failure policies
// and timeouts, so the API server does the same work deciding whom to call.
func (w Webhooks) PointedAt(name, host string, port int, caBundle []byte) (Webhooks, error) {
	out, err := w.forEndpoint(endpoint{host: host, port: port, caBundle: caBundle})
	for _, obj := range out.Objects() {
		obj.SetName(name)
		obj.SetAnnotations(nil)
	}
	return out, err
}

// Paths lists every webhook's path, validating ones first.
func (w Webhooks) Paths() ([]string, error) {
	local, err := w.forEndpoint(endpoint{host: "x", port: 1})
	if err != nil {
		return nil, err
	}
	var paths []string
	add := func(cc admissionregistrationv1.WebhookClientConfig) {
		u, _ := url.Parse(*cc.URL)
		paths = append(paths, u.Path)
	}
	if local.Validating != nil {
		for _, wh := range local.Validating.Webhooks {
			add(wh.ClientConfig)
		}
	}
	if local.Mutating != nil {
		for _, wh := range local.Mutating.Webhooks {
			add(wh.ClientConfig)
		}
	}
	return paths, nil
}

// Objects returns the configurations as a list, validating first.
func (w Webhooks) Objects() []client.Object {
	var objs []client.Object
	if w.Validating != nil {
		objs = append(objs, w.Validating)
	}
	if w.Mutating != nil {
		objs = append(objs, w.Mutating)
	}
	return objs
}

// applyTyped server-side applies a typed object as the harness's field
// manager, so that a field Steward writes itself (the caBundle it injects in
// self-managed mode) is left alone.
func applyTyped(ctx context.Context, c client.Client, obj client.Object) error {
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvks[0].Kind, obj.GetName(), err)
	}
	return nil
}

// registerWebhooks writes the given configurations, or when nil those
// rendered for Steward in namespace, pointed at ep.
func (e *Env) registerWebhooks(ctx context.Context, ep endpoint, namespace string, given *Webhooks) error {
	var rendered Webhooks
	if given != nil {
		rendered = *given
	} else {
		var err error
		if rendered, err = WebhooksFor(namespace); err != nil {
			return err
		}
	}
	local, err := rendered.forEndpoint(ep)
	if err != nil {
		return err
	}
	for _, obj := range local.Objects() {
		if err := applyTyped(ctx, e.Client, obj); err != nil {
			return fmt.Errorf("registering Steward's webhooks: %w", err)
		}
	}
	return nil
}

// waitCABundles waits until Steward has injected its CA into every webhook
// of its configurations (self-managed certificates).
func (e *Env) waitCABundles(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var missing error
	for {
		missing = e.missingCABundles(ctx)
		if missing == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for Steward to inject its CA into its webhook configurations: %w", missing)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (e *Env) missingCABundles(ctx context.Context) error {
	var errs []error
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: WebhookConfigurationName}, vwc); client.IgnoreNotFound(err) != nil {
		return err
	}
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			errs = append(errs, fmt.Errorf("validating webhook %s has no caBundle", w.Name))
		}
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: WebhookConfigurationName}, mwc); client.IgnoreNotFound(err) != nil {
		return err
	}
	for _, w := range mwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			errs = append(errs, fmt.Errorf("mutating webhook %s has no caBundle", w.Name))
		}
	}
	return errors.Join(errs...)
}
