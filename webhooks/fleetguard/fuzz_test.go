package fleetguard

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/webhooks/internal/gitops"
	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
	"github.com/stewardhq/steward/webhooks/object"
)

// fuzzSeeds are committed seeds: realistic objects, odd JSON, and deeply
// nested input.
var fuzzSeeds = []string{
	webDeployment,
	`{}`,
	`{"metadata": {"labels": {"objectset.rio.cattle.io/hash": "x"}}}`,
	`{"metadata": {"labels": {"objectset.rio.cattle.io/hash": 1}}}`,
	`{"metadata": null, "spec": [1, "2", {"3": null}]}`,
	`{"metadata": {"annotations": {"objectset.rio.cattle.io/owner-gvk": "v1, Kind=Namespace"}, "labels": {"objectset.rio.cattle.io/hash": ""}}}`,
	`{"spec": {"replicas": 9007199254740993}}`,
	`{"spec": {"replicas": "many"}}`,
	`[]`, `null`, `"string"`, `{`, ``,
	nested(5000, `1`),
	strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000),
}

// FuzzDecoders feeds arbitrary bytes to every reader this rule has.
func FuzzDecoders(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := object.New([]byte(s))
		if v.FormErr() == nil {
			_ = metaOf(v).claim()
		}
		_ = metaOf(v).owner()
		_, _ = gitops.Replicas(v)
		_ = gitops.AddedOwners(v, v)
	})
}

// FuzzHandle runs whole requests with arbitrary objects through the
// handler: it must answer, never panic.
func FuzzHandle(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, webDeployment, uint8(0))
		f.Add(webDeployment, s, uint8(1))
	}
	r := ignoringReplicas()
	f.Fuzz(func(t *testing.T, oldObj, newObj string, op uint8) {
		gitopstest.CheckAnswers(t, r, gitopstest.FuzzRequest(op, oldObj, newObj))
	})
}

// nested returns {"a": {"a": ... leaf}} n levels deep.
func nested(n int, leaf string) string {
	return strings.Repeat(`{"a": `, n) + leaf + strings.Repeat(`}`, n)
}
