package argocdguard

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
)

// Argo CD's sync impersonation (application.sync.impersonation.enabled in
// argocd-cm, beta since Argo CD 3.5) runs syncs, and the UI's and API's
// operations, as the service account the Application's AppProject names
// for its destination: the first of spec.destinationServiceAccounts whose
// server and namespace globs match. With syncImpersonation set, that
// service account writes the Application's objects, as a Flux tenant's
// writes its owner's; under impersonation a UI edit and a sync are the
// same identity, and neither is refused.

var appProjects = schema.GroupResource{Group: "argoproj.io", Resource: "appprojects"}

// keepProject is the AppProjects' informer transform.
var keepProject = gitops.Keep(Name, projectOf)

// project is what the cache keeps of an AppProject: its destinations'
// service accounts, in order.
type project struct {
	metav1.ObjectMeta
	accounts []destinationAccount
}

// destinationAccount is one of spec.destinationServiceAccounts.
type destinationAccount struct {
	server, namespace pattern
	account           string
}

func (p *project) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the AppProject as informers expect; cached ones
// are never changed, so the copy shares their slice.
func (p *project) DeepCopyObject() runtime.Object {
	out := *p
	return &out
}

func projectOf(o *unstructured.Unstructured) *project {
	p := &project{}
	p.Namespace, p.Name, p.ResourceVersion = o.GetNamespace(), o.GetName(), o.GetResourceVersion()
	list, _, _ := unstructured.NestedSlice(o.Object, "spec", "destinationServiceAccounts")
	for _, item := range list {
		m, _ := item.(map[string]any)
		server, _ := m["server"].(string)
		namespace, _ := m["namespace"].(string)
		account, _ := m["defaultServiceAccount"].(string)
		if account != "" {
			p.accounts = append(p.accounts, destinationAccount{server: newPattern(server), namespace: newPattern(namespace), account: account})
		}
	}
	return p
}

// syncUser is the user a sync to server and namespace runs as: the first
// matching entry's service account, in the destination namespace unless
// it names its own ("<namespace>:<name>"); "" when none matches, and
// Argo CD then refuses to sync.
func (p *project) syncUser(server, namespace string) string {
	for _, d := range p.accounts {
		if d.server.match(server) && d.namespace.match(namespace) {
			if ns, name, ok := strings.Cut(d.account, ":"); ok {
				return "system:serviceaccount:" + ns + ":" + name
			}
			return "system:serviceaccount:" + namespace + ":" + d.account
		}
	}
	return ""
}

// syncWriter is the impersonated user of the Application's syncs, when
// the guard follows impersonation and the AppProject names one.
func (r resolver) syncWriter(a *application) string {
	if !r.impersonation {
		return ""
	}
	p, found, err := gitops.Lookup[*project](r.Cache, appProjects, a.Namespace, a.project)
	if err != nil || !found {
		return ""
	}
	return p.syncUser(a.destServer, a.destNamespace)
}
