package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stewardhq/steward/e2e/harness"
)

// Clients reach the API server as one identity: typed (protobuf, as
// controllers talk) and dynamic (JSON, the only encoding custom resources
// have).
type Clients struct {
	Kube kubernetes.Interface
	Dyn  dynamic.Interface
}

// NewClients reaches the API server as user (the admin when empty) with
// timeout, unthrottled: closed-loop writers and seeding must be limited by
// the server, which is what is measured, not by the client.
func NewClients(env *harness.Env, user string, groups []string, timeout time.Duration) *Clients {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst, cfg.Timeout, cfg.WarningHandler = -1, 0, timeout, rest.NoWarnings{}
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	}
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	return &Clients{Kube: kubernetes.NewForConfigOrDie(proto), Dyn: dynamic.NewForConfigOrDie(cfg)}
}

// Prepare readies a started API server for seeding: the CRDs of the mix's
// MR kinds that not every environment has (provider-sql's Schema and
// Grant) and those at crds (paths under the repository root), served; and
// the namespaces the objects are seeded and written in.
func Prepare(ctx context.Context, env *harness.Env, crds ...string) error {
	opts, err := crdOptions(append([]string{filepath.Join("e2e", "upstream", "provider-sql-scale")}, crds...)...)
	if err == nil {
		_, err = envtest.InstallCRDs(env.Config, opts)
	}
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	for _, ns := range []string{FleetNamespace, FluxNamespace, ClaimsNamespace} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// ProtoFormat is the only exposition format that carries native
// histograms, whose buckets (about 10% wide) give usable percentiles.
func ProtoFormat() string { return string(expfmt.NewFormat(expfmt.TypeProtoDelim)) }

// Scrape decodes a metrics response in whatever format it came.
func Scrape(resp *http.Response, err error) (map[string]*dto.MetricFamily, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET metrics: %s", resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	out := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding metrics: %w", err)
		}
		out[mf.GetName()] = mf
	}
}

// FetchPprof GETs Steward's /debug/pprof/<query> and saves what it answers
// to path, or discards it when path is empty (heap?gc=1 has collected by
// then).
func FetchPprof(addr, query, path string) error {
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Get("http://" + addr + "/debug/pprof/" + query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if path == "" {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}
