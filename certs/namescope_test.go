package certs

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestNameScopedListsAddsTheNameSelector(t *testing.T) {
	tests := map[string]struct {
		reason string
		method string
		url    string
		want   string
	}{
		"ListSecrets": {
			reason: "A list of the namespace's Secrets asks for the one Secret, so resourceNames authorizes it.",
			method: http.MethodGet, url: "/api/v1/namespaces/steward-system/secrets?limit=500",
			want: "metadata.name=steward-serving-cert",
		},
		"WatchSecrets": {
			reason: "So does the watch.",
			method: http.MethodGet, url: "/api/v1/namespaces/steward-system/secrets?watch=true&resourceVersion=1",
			want: "metadata.name=steward-serving-cert",
		},
		"ExistingSelectorKept": {
			reason: "A selector already present is kept and narrowed.",
			method: http.MethodGet, url: "/api/v1/namespaces/steward-system/secrets?fieldSelector=type%3DOpaque",
			want: "type=Opaque,metadata.name=steward-serving-cert",
		},
		"PathPrefix": {
			reason: "An API server behind a path prefix is matched by suffix.",
			method: http.MethodGet, url: "/k8s/clusters/c-1/api/v1/namespaces/steward-system/secrets",
			want: "metadata.name=steward-serving-cert",
		},
		"OtherNamespace": {
			reason: "Other namespaces' Secrets are left alone (and RBAC refuses them).",
			method: http.MethodGet, url: "/api/v1/namespaces/default/secrets",
		},
		"GetByName": {
			reason: "A request for one Secret by name needs no selector.",
			method: http.MethodGet, url: "/api/v1/namespaces/steward-system/secrets/steward-serving-cert",
		},
		"Update": {
			reason: "Writes pass unchanged.",
			method: http.MethodPut, url: "/api/v1/namespaces/steward-system/secrets",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.URL.Query().Get("fieldSelector")
			}))
			defer srv.Close()
			rt := &nameScopedLists{next: http.DefaultTransport, collection: "/api/v1/namespaces/steward-system/secrets", name: "steward-serving-cert"}
			req, _ := http.NewRequest(tc.method, srv.URL+tc.url, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got != tc.want {
				t.Errorf("%s\nfieldSelector = %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}
