package certs

import (
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// nameScopedManager is the manager handed to cert-controller. cert-controller
// builds its own informer cache from the manager's rest.Config and lists and
// watches every Secret of the namespace, which RBAC can only allow for all
// Secrets of the namespace. Through this config its list and watch requests
// for Secrets in the namespace ask for the one Secret by name (a
// metadata.name field selector), which RBAC authorizes against
// resourceNames. Everything else is the real manager.
type nameScopedManager struct {
	manager.Manager
	config *rest.Config
}

func (m nameScopedManager) GetConfig() *rest.Config { return m.config }

func newNameScopedManager(mgr manager.Manager, namespace, secretName string) nameScopedManager {
	cfg := rest.CopyConfig(mgr.GetConfig())
	collection := "/api/v1/namespaces/" + namespace + "/secrets"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &nameScopedLists{next: rt, collection: collection, name: secretName}
	})
	return nameScopedManager{Manager: mgr, config: cfg}
}

// nameScopedLists adds fieldSelector=metadata.name=<name> to GET requests
// for one collection (list and watch); other requests pass unchanged.
type nameScopedLists struct {
	next       http.RoundTripper
	collection string
	name       string
}

func (t *nameScopedLists) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), t.collection) {
		return t.next.RoundTrip(req)
	}
	q := req.URL.Query()
	selector := "metadata.name=" + t.name
	if existing := q.Get("fieldSelector"); existing != "" {
		selector = existing + "," + selector
	}
	q.Set("fieldSelector", selector)
	scoped := req.Clone(req.Context())
	u := *req.URL
	u.RawQuery = q.Encode()
	scoped.URL = &u
	return t.next.RoundTrip(scoped)
}
