package suspendnotice

import (
	"context"
	"testing"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/object"
)

// FuzzDecodeFluxObject feeds arbitrary bytes to the Flux object decoder.
func FuzzDecodeFluxObject(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"web","namespace":"apps","annotations":{"steward.dev/suspended-at":"x"}},"spec":{"suspend":true}}`))
	f.Add([]byte(`{"metadata":{"annotations":null},"spec":{"suspend":"true"}}`))
	f.Add([]byte(`{"spec":null}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := decodeFluxObject(object.New(raw))
		if err == nil {
			_ = o.suspended()
			_, _, _ = o.record()
		}
	})
}

// FuzzDecodeEvent feeds arbitrary bytes to both event decoders.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(false, []byte(`{"involvedObject":{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","name":"web"},"source":{"component":"kustomize-controller"},"message":"Reconciliation finished in 1s, next run in 1m0s"}`))
	f.Add(true, []byte(`{"regarding":{"kind":"HelmRelease"},"reportingController":"helm-controller","note":"next run in 5m"}`))
	f.Add(false, []byte(`{"source":null}`))
	f.Fuzz(func(t *testing.T, v1 bool, raw []byte) {
		group := ""
		if v1 {
			group = "events.k8s.io"
		}
		_, _ = decodeEvent(group, object.New(raw))
	})
}

// FuzzRewrite checks the message rewrite on arbitrary text: it never grows
// a message past the API server's limit, what it changes announces no run
// any more, and it is idempotent.
func FuzzRewrite(f *testing.F) {
	f.Add(finished)
	f.Add("(combined from similar events): " + finished)
	f.Add("next run in next run in 1s")
	f.Add("a, next run in 1.5h2m, next run in 3µs")
	f.Add("successful scan, next scan in 5m0s, next run in 1s")
	f.Fuzz(func(t *testing.T, in string) {
		out, changed := rewrite(in)
		if !changed {
			if out != in {
				t.Fatalf("unchanged rewrite returned %q for %q", out, in)
			}
			return
		}
		if len(out) > maxMessage {
			t.Fatalf("rewrite of %q is %d bytes", in, len(out))
		}
		if nextRun.MatchString(out) {
			t.Fatalf("rewrite(%q) = %q still announces a run", in, out)
		}
		if again, changed := rewrite(out); changed {
			t.Fatalf("rewrite is not idempotent: %q, then %q", out, again)
		}
	})
}

// FuzzHandle sends arbitrary objects through the rule, as a Flux object
// update and as both kinds of event: it must answer, never panic.
func FuzzHandle(f *testing.F) {
	f.Add(uint8(0), []byte(`{"spec":{"suspend":false}}`), []byte(`{"metadata":{"annotations":{}},"spec":{"suspend":true}}`))
	f.Add(uint8(1), []byte(`{}`), []byte(`{"involvedObject":{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","name":"web","namespace":"apps"},"source":{"component":"kustomize-controller"},"message":"x, next run in 1m"}`))
	f.Add(uint8(2), []byte(`{}`), []byte(`{"regarding":{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","name":"web"},"reportingController":"kustomize-controller","note":"next run in 1m"}`))
	r := newRule(suspendedWeb)
	f.Fuzz(func(t *testing.T, which uint8, oldRaw, newRaw []byte) {
		var b *admissiontest.Request
		switch which % 3 {
		case 0:
			b = admissiontest.Update(ksGVR, "Kustomization", oldRaw, newRaw)
		case 1:
			b = admissiontest.Update(coreEvGVR, "Event", oldRaw, newRaw)
		default:
			b = admissiontest.Create(evV1GVR, "Event", newRaw)
		}
		if resp := ruletest.Judge(context.Background(), r, b.Build()); resp.Result == nil {
			t.Fatal("no result")
		}
	})
}
