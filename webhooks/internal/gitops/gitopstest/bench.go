package gitopstest

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// Benchmark times a guard, or the allow-all baseline, on req, once it
// checked that h answers it as allowed says: a benchmark of a path the
// request does not take measures nothing.
func Benchmark(b *testing.B, h rule.Rule, req admission.Request, allowed bool) {
	b.Helper()
	ruletest.BenchmarkVerdict(b, h, req, func(got admission.Response) error {
		if got.Allowed != allowed {
			return fmt.Errorf("Handle(...).Allowed = %v, want %v: %v", got.Allowed, allowed, got.Result)
		}
		return nil
	})
}

// Written appends the managedFields entry the API server records for an
// Update by manager at time t, through subresource when it is set, that
// owns fields (a fieldsV1 set): the new object of an update differs from
// the old in its metadata even when nothing guarded changed.
func Written(manager, t, subresource string, fields map[string]any) func(map[string]any) {
	return func(o map[string]any) {
		e := map[string]any{"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": t, "fieldsType": "FieldsV1", "fieldsV1": fields}
		if subresource != "" {
			e["subresource"] = subresource
		}
		md := admissiontest.At(o, "metadata")
		mf, _ := md["managedFields"].([]any)
		md["managedFields"] = append(mf, e)
	}
}
