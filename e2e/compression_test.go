package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStewardAsksForUncompressedResponses proves on the wire that the real
// binary's requests to the API server, its informers' lists and watches
// included, do not ask for gzip: the API server would compress every watch
// event as a stream of its own, and Steward would decompress each one.
func TestStewardAsksForUncompressedResponses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy := startAPIProxy(t, "")
	startStewardProc(t, ctx, procOptions{kubeconfig: proxy.kubeconfig}) // returns once ready: its caches synced

	watches := 0
	for _, r := range proxy.requests() {
		if strings.Contains(r.query, "watch=true") {
			watches++
		}
		if strings.Contains(r.acceptEncoding, "gzip") {
			t.Errorf("%s %s?%s asked for a compressed response (Accept-Encoding: %s)", r.method, r.path, r.query, r.acceptEncoding)
		}
	}
	if watches == 0 {
		t.Fatalf("no watch went through the proxy among %d requests: the test proves nothing", len(proxy.requests()))
	}
}
