// Package admissiontest builds admission requests for rule tests, so each
// test states only what matters to it: the operation, the objects, the user.
package admissiontest

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Request is a builder for an admission.Request.
type Request struct {
	req admission.Request
}

// Create starts a CREATE request for obj (a map, struct or raw JSON).
func Create(gvr schema.GroupVersionResource, kind string, obj any) *Request {
	return newRequest(admissionv1.Create, gvr, kind).Object(obj)
}

// Update starts an UPDATE request from oldObj to obj.
func Update(gvr schema.GroupVersionResource, kind string, oldObj, obj any) *Request {
	return newRequest(admissionv1.Update, gvr, kind).OldObject(oldObj).Object(obj)
}

// Delete starts a DELETE request for the stored oldObj.
func Delete(gvr schema.GroupVersionResource, kind string, oldObj any) *Request {
	return newRequest(admissionv1.Delete, gvr, kind).OldObject(oldObj)
}

func newRequest(op admissionv1.Operation, gvr schema.GroupVersionResource, kind string) *Request {
	gvk := metav1.GroupVersionKind{Group: gvr.Group, Version: gvr.Version, Kind: kind}
	res := metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	return &Request{req: admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:             types.UID(fmt.Sprintf("uid-%s-%s", op, gvr.Resource)),
		Operation:       op,
		Kind:            gvk,
		Resource:        res,
		RequestKind:     &gvk,
		RequestResource: &res,
		UserInfo:        authenticationv1.UserInfo{Username: "jane", Groups: []string{"system:authenticated"}},
	}}}
}

// Object sets the new object; it also takes name and namespace from it.
func (r *Request) Object(obj any) *Request {
	r.req.Object = raw(obj)
	r.takeName(r.req.Object.Raw)
	return r
}

// OldObject sets the stored object; it also takes name and namespace from it.
func (r *Request) OldObject(obj any) *Request {
	r.req.OldObject = raw(obj)
	r.takeName(r.req.OldObject.Raw)
	return r
}

func (r *Request) takeName(data []byte) {
	var m metav1.PartialObjectMetadata
	if json.Unmarshal(data, &m) == nil {
		if m.Name != "" {
			r.req.Name = m.Name
		}
		if m.Namespace != "" {
			r.req.Namespace = m.Namespace
		}
	}
}

// User sets the requesting user and groups.
func (r *Request) User(name string, groups ...string) *Request {
	r.req.UserInfo = authenticationv1.UserInfo{Username: name, Groups: groups}
	return r
}

// DryRun marks the request as a dry run.
func (r *Request) DryRun() *Request {
	t := true
	r.req.DryRun = &t
	return r
}

// SubResource sets the subresource, e.g. "status" or "scale".
func (r *Request) SubResource(s string) *Request {
	r.req.SubResource = s
	return r
}

// RequestKind sets the version the client used, which differs from Kind
// when the API server converted the request (matchPolicy Equivalent).
func (r *Request) RequestKind(gvk schema.GroupVersionKind, resource string) *Request {
	k := metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	res := metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource}
	r.req.RequestKind, r.req.RequestResource = &k, &res
	return r
}

// Options sets the operation's options, e.g. metav1.DeleteOptions.
func (r *Request) Options(opts any) *Request {
	r.req.Options = raw(opts)
	return r
}

// Namespace overrides the request's namespace.
func (r *Request) Namespace(ns string) *Request {
	r.req.Namespace = ns
	return r
}

// Build returns the admission request.
func (r *Request) Build() admission.Request {
	return r.req
}

func raw(obj any) runtime.RawExtension {
	switch o := obj.(type) {
	case nil:
		return runtime.RawExtension{}
	case []byte:
		return runtime.RawExtension{Raw: o}
	case string:
		return runtime.RawExtension{Raw: []byte(o)}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("admissiontest: cannot encode %T: %v", obj, err))
	}
	return runtime.RawExtension{Raw: data}
}
