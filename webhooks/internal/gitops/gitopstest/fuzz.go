package gitopstest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/rule"
)

// The requests FuzzRequest makes, by op: every write path of a guard.
const (
	FuzzCreate uint8 = iota
	FuzzUpdate
	FuzzDelete
	FuzzStatus
	FuzzScale
	// FuzzOps is how many there are.
	FuzzOps
)

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// FuzzRequest is a request of a guard's FuzzHandle, which writes a
// Deployment: by op (modulo FuzzOps), a create of newObj, an update from
// oldObj to newObj, a delete of oldObj, or such an update through the
// status or scale subresource.
func FuzzRequest(op uint8, oldObj, newObj string) *admissiontest.Request {
	switch op % FuzzOps {
	case FuzzCreate:
		return admissiontest.Create(deployments, "Deployment", []byte(newObj))
	case FuzzUpdate:
		return admissiontest.Update(deployments, "Deployment", []byte(oldObj), []byte(newObj))
	case FuzzDelete:
		return admissiontest.Delete(deployments, "Deployment", []byte(oldObj))
	case FuzzStatus:
		return admissiontest.Update(deployments, "Deployment", []byte(oldObj), []byte(newObj)).SubResource("status")
	}
	return admissiontest.Update(deployments, "Scale", []byte(oldObj), []byte(newObj)).SubResource("scale")
}

// CheckAnswers fails t unless r answers req with a result: whatever the
// objects, a guard never panics and never answers without one.
func CheckAnswers(t *testing.T, r rule.Rule, req *admissiontest.Request) {
	t.Helper()
	if resp := r.Handle(context.Background(), rule.NewRequest(req.Build())); resp.Result == nil {
		t.Fatal("response without a result")
	}
}
