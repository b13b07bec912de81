package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stewardhq/steward/webhooks/internal/gitops/gitopstest"
)

var (
	deployments  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSets = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
)

func TestListKinds(t *testing.T) {
	labelled := map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}
	objs := []*metav1.PartialObjectMetadata{
		gitopstest.Object(deployments, "a", "web", labelled, nil),
		gitopstest.Object(deployments, "b", "api", labelled, nil),
		gitopstest.Object(deployments, "c", "db", labelled, nil),
		gitopstest.Object(deployments, "d", "unlabelled", nil, nil),
		gitopstest.Object(statefulSets, "a", "cache", labelled, nil),
	}
	cases := map[string]struct {
		reason      string
		reader      func() *gitopstest.Reader
		lists       []KindList
		want        []string
		wantSkipped int
		wantErr     bool
		wantPages   int
	}{
		"EveryPageIsRead": {
			reason:    "A kind whose objects fill several pages is read to the last one, following the continue token.",
			reader:    func() *gitopstest.Reader { r := gitopstest.NewReader(objs...); r.MaxPage = 1; return r },
			lists:     []KindList{{GroupVersionKind: deployments}},
			want:      []string{"a/web", "b/api", "c/db", "d/unlabelled"},
			wantPages: 4,
		},
		"TheLabelSelects": {
			reason:    "Only objects carrying the tool's label are listed.",
			reader:    func() *gitopstest.Reader { return gitopstest.NewReader(objs...) },
			lists:     []KindList{{GroupVersionKind: deployments, Label: "kustomize.toolkit.fluxcd.io/name"}},
			want:      []string{"a/web", "b/api", "c/db"},
			wantPages: 1,
		},
		"AForbiddenKindIsSkipped": {
			reason: "A kind Steward may not list is skipped; the others are listed.",
			reader: func() *gitopstest.Reader {
				r := gitopstest.NewReader(objs...)
				r.Forbidden = []schema.GroupKind{deployments.GroupKind()}
				return r
			},
			lists:       []KindList{{GroupVersionKind: deployments}, {GroupVersionKind: statefulSets}},
			want:        []string{"a/cache"},
			wantSkipped: 1,
			wantPages:   2,
		},
		"AKindNotServedIsSkipped": {
			reason: "A kind the API server does not serve (its CRD deleted) is skipped.",
			reader: func() *gitopstest.Reader {
				r := gitopstest.NewReader(objs...)
				r.NotServed = []schema.GroupKind{statefulSets.GroupKind()}
				return r
			},
			lists:       []KindList{{GroupVersionKind: deployments}, {GroupVersionKind: statefulSets}},
			want:        []string{"a/web", "b/api", "c/db", "d/unlabelled"},
			wantSkipped: 1,
			wantPages:   2,
		},
		"NothingListedIsAnError": {
			reason: "When no kind could be listed the audit cannot answer, and the previous findings stand.",
			reader: func() *gitopstest.Reader {
				r := gitopstest.NewReader(objs...)
				r.Forbidden = []schema.GroupKind{deployments.GroupKind(), statefulSets.GroupKind()}
				return r
			},
			lists:       []KindList{{GroupVersionKind: deployments}, {GroupVersionKind: statefulSets}},
			wantSkipped: 2,
			wantErr:     true,
			wantPages:   2,
		},
		"NoKindIsNoError": {
			reason: "No owner lists anything: nothing to list.",
			reader: func() *gitopstest.Reader { return gitopstest.NewReader(objs...) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := tc.reader()
			var got []string
			skipped, err := ListKinds(context.Background(), r, tc.lists, func(_ KindList, o *metav1.PartialObjectMetadata) error {
				got = append(got, o.Namespace+"/"+o.Name)
				return nil
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nListKinds(...): %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nobjects listed (-want +got):\n%s", tc.reason, diff)
			}
			if len(skipped) != tc.wantSkipped {
				t.Errorf("%s\nskipped %v, want %d kinds", tc.reason, skipped, tc.wantSkipped)
			}
			if n := len(r.Requests()); n != tc.wantPages {
				t.Errorf("%s\n%d list requests, want %d:\n%s", tc.reason, n, tc.wantPages, strings.Join(r.Requests(), "\n"))
			}
			for _, req := range r.Requests() {
				if !strings.Contains(req, fmt.Sprintf("limit=%d", AuditPageSize)) {
					t.Errorf("%s\nrequest %q does not ask for a page of %d", tc.reason, req, AuditPageSize)
				}
			}
		})
	}
}

func TestListKindsStopsAtOtherErrors(t *testing.T) {
	r := gitopstest.NewReader(gitopstest.Object(deployments, "a", "web", nil, nil))
	boom := errors.New("boom")
	_, err := ListKinds(context.Background(), r, []KindList{{GroupVersionKind: deployments}}, func(KindList, *metav1.PartialObjectMetadata) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("ListKinds(...) = %v, want the callback's error", err)
	}
	if _, err := ListKinds(context.Background(), nil, []KindList{{GroupVersionKind: deployments}}, nil); err == nil {
		t.Error("ListKinds without a reader succeeded")
	}
}

func TestAuditRBACCoversTheAuditedWorkloads(t *testing.T) {
	granted := map[schema.GroupResource]bool{}
	for _, p := range AuditRBAC() {
		want := []string{"get", "list"}
		if cmp.Equal(p.Resources, []string{"horizontalpodautoscalers"}) {
			want = []string{"list"} // the fight check's
		}
		if !cmp.Equal(p.Verbs, want) {
			t.Errorf("AuditRBAC grants %v on %v, want %v: get (a scale request's check of who declares the replicas, the fight check's read of them) and list (the audit) only", p.Verbs, p.Resources, want)
		}
		for _, g := range p.APIGroups {
			for _, r := range p.Resources {
				granted[schema.GroupResource{Group: g, Resource: r}] = true
			}
		}
	}
	for res, gvk := range scaledKinds {
		if !granted[schema.GroupResource{Group: gvk.Group, Resource: res}] {
			t.Errorf("the audit lists %s, but AuditRBAC does not grant list on %s", gvk.Kind, res)
		}
		if !Audited(gvk.GroupKind()) {
			t.Errorf("Audited(%s) = false", gvk.GroupKind())
		}
	}
	if Audited(schema.GroupKind{Kind: "Secret"}) {
		t.Error("Audited(Secret) = true: Steward may not list Secrets")
	}
}
