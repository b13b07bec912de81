package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// apiProxy is a reverse proxy in front of the API server, for an extra
// Steward to reach the cluster through. It serves TLS, as an API server
// does: client-go sends some settings, such as DisableCompression, only
// over TLS. It records every request
// Steward makes, can hold requests back (an informer that cannot list
// never syncs), and can make every request as another user.
type apiProxy struct {
	srv        *httptest.Server
	kubeconfig string

	mu      sync.Mutex
	held    func(*http.Request) bool
	release chan struct{}
	seen    []apiRequest
}

// apiRequest is one request through the proxy and the API server's status.
type apiRequest struct {
	method, path, query string
	acceptEncoding      string // as the client sent it
	status              int
}

// startAPIProxy proxies to the API server as the harness's admin, or, with
// impersonate set, as that user.
func startAPIProxy(t *testing.T, impersonate string) *apiProxy {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		p.mu.Lock()
		p.seen = append(p.seen, apiRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept-Encoding"), resp.StatusCode})
		p.mu.Unlock()
		return nil
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		held, release := p.held != nil && p.held(r), p.release
		p.mu.Unlock()
		if held {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		if impersonate != "" {
			r.Header.Set("Impersonate-User", impersonate)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.releaseAll()
		p.srv.CloseClientConnections()
		p.srv.Close()
	})

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{
		Server:                   p.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}),
	}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(p.kubeconfig, 0o600)
	return p
}

// hold makes requests matching f wait until releaseAll.
func (p *apiProxy) hold(f func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = f
}

func (p *apiProxy) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.release)
		p.held = nil
	}
}

// requests returns what went through the proxy so far.
func (p *apiProxy) requests() []apiRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]apiRequest(nil), p.seen...)
}

// readsCollection says whether r lists or watches the collection at path:
// an informer's initial sync is either a list or (client-go's watch-list)
// a watch that sends the initial events.
func readsCollection(r *http.Request, path string) bool {
	return r.Method == http.MethodGet && r.URL.Path == path
}
