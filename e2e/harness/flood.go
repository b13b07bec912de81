package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxSizeReview is an AdmissionReview of about size bytes that a webhook
// must read whole to judge: a person's update of a Fleet-managed ConfigMap
// whose old and new objects each carry half of the size in data, as the
// largest objects the API server stores would.
func MaxSizeReview(size int) []byte {
	half := strings.Repeat("x", size/2-1024)
	object := func(value string) map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "big", "namespace": "default", "labels": map[string]any{"objectset.rio.cattle.io/hash": "x"}},
			"data":     map[string]any{"blob": value},
		}
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       "00000000-0000-0000-0000-000000000001",
			"kind":      map[string]any{"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource":  map[string]any{"group": "", "version": "v1", "resource": "configmaps"},
			"namespace": "default", "name": "big", "operation": "UPDATE",
			"userInfo":  map[string]any{"username": "mallory"},
			"object":    object(half[:len(half)-1] + "y"),
			"oldObject": object(half),
		},
	}
	b, err := json.Marshal(review)
	if err != nil {
		panic(err) // plain maps of strings always encode
	}
	return b
}

// FloodResult counts the answers a flood got, by HTTP status, and the
// requests that got none (refused connections, resets).
type FloodResult struct {
	Sent     int
	Statuses map[int]int
	Errors   int
}

// Flood is an unauthenticated client's worst: clients connections each
// post body to url, one after another, for d or until each has sent
// perClient bodies. caPEM verifies the server (an attacker would not
// bother; it changes nothing the server does).
func Flood(ctx context.Context, url string, caPEM, body []byte, clients, perClient int, d time.Duration) FloodResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: clients,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	var mu sync.Mutex
	res := FloodResult{Statuses: map[int]int{}}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range perClient {
				if ctx.Err() != nil {
					return
				}
				status := post(ctx, client, url, body)
				if ctx.Err() != nil {
					return // cut off by the end of the flood, not answered
				}
				mu.Lock()
				res.Sent++
				if status == 0 {
					res.Errors++
				} else {
					res.Statuses[status]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

// post sends one body and returns the answer's status, or 0 without one.
func post(ctx context.Context, c *http.Client, url string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
