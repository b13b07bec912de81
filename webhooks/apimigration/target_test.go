package apimigration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/stewardhq/steward/webhooks/admissiontest"
	"github.com/stewardhq/steward/webhooks/internal/clustercache"
	"github.com/stewardhq/steward/webhooks/internal/ruletest"
)

// servedFrom is what the cluster cache would publish with the vendored
// CRDs of a Flux release installed, each labelled with label when it is
// not empty (as `flux install` labels them).
func servedFrom(t *testing.T, release, label string) *clustercache.Served {
	s, _ := clusterFrom(t, release, label)
	return s
}

// clusterFrom is servedFrom and the installed CRDs themselves, as the
// follower reads them; only kinds (Kind names) are installed when given.
func clusterFrom(t *testing.T, release, label string, kinds ...string) (*clustercache.Served, map[schema.GroupResource]*CRDShape) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fluxCRDs, release, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs vendored for Flux %s: %v", release, err)
	}
	s := emptyServed()
	shapes := map[schema.GroupResource]*CRDShape{}
	for _, file := range files {
		crd := readCRD(t, file)
		if len(kinds) > 0 && !slices.Contains(kinds, crd.Spec.Names.Kind) {
			continue
		}
		gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
		res := &clustercache.Resource{GroupResource: gr, Kind: crd.Spec.Names.Kind, Namespaced: true}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				res.Versions = append(res.Versions, v.Name)
			}
		}
		s.Resources[gr] = res
		s.CRDs[gr] = true
		if label != "" {
			s.CRDAppVersions[gr] = label
		}
		shapes[gr] = shapeOf(LookupKind(crd.Spec.Group, crd.Spec.Names.Kind), readCRDObject(t, file))
	}
	return s, shapes
}

func emptyServed() *clustercache.Served {
	return &clustercache.Served{
		Resources:      map[schema.GroupResource]*clustercache.Resource{},
		CRDs:           map[schema.GroupResource]bool{},
		CRDAppVersions: map[schema.GroupResource]string{},
	}
}

// withServed adds one served resource to s.
func withServed(s *clustercache.Served, group, resource string, versions ...string) *clustercache.Served {
	gr := schema.GroupResource{Group: group, Resource: resource}
	s.Resources[gr] = &clustercache.Resource{GroupResource: gr, Versions: versions}
	s.CRDs[gr] = true
	return s
}

// labelled sets the release label of one CRD in s.
func labelled(s *clustercache.Served, group, resource, label string) *clustercache.Served {
	s.CRDAppVersions[schema.GroupResource{Group: group, Resource: resource}] = label
	return s
}

// readCRDObject reads a vendored CRD as the API server returns it: decoded
// JSON.
func readCRDObject(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}

func target(release string, source Source) Target {
	return Target{Release: MustParseRelease(release), Source: source}
}

// ranged is a target whose CRDs may belong to any release from release to
// upto.
func ranged(release, upto string, source Source) Target {
	return Target{Release: MustParseRelease(release), Upto: MustParseRelease(upto), Source: source}
}

// TestClusterTargetFromEachReleasesCRDs installs, in the cluster cache's
// view, each release's real CRDs: with Flux's release label the target is
// the label's release; without it (the CRDs as the controllers' repositories
// ship them) it is inferred from the served versions, and is still that
// release.
func TestClusterTargetFromEachReleasesCRDs(t *testing.T) {
	for _, r := range releases {
		t.Run(r.String(), func(t *testing.T) {
			if got, want := ClusterTarget(servedFrom(t, r.String(), "v"+r.String()+".0"), nil), target(r.String(), SourceClusterLabel); got != want {
				t.Errorf("labelled v%s.0: target %v, want %v", r, got, want)
			}
			if got, want := ClusterTarget(clusterFrom(t, r.String(), "")), target(r.String(), SourceServedVersions); got != want {
				t.Errorf("unlabelled: target %v, want %v", got, want)
			}
		})
	}
}

func TestClusterTarget(t *testing.T) {
	cases := map[string]struct {
		reason string
		served *clustercache.Served
		want   Target
	}{
		"NothingSeenYet": {
			reason: "before the first discovery the default applies",
			served: nil,
			want:   target("2.6", SourceDefault),
		},
		"NoFluxInstalled": {
			reason: "without Flux CRDs the default applies",
			served: withServed(emptyServed(), "apps", "deployments", "v1"),
			want:   target("2.6", SourceDefault),
		},
		"LabelWithPatchRelease": {
			reason: "the label as flux install writes it names the release",
			served: labelled(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), KustomizeGroup, "kustomizations", "v2.8.3"),
			want:   target("2.8", SourceClusterLabel),
		},
		"LabelWithoutV": {
			reason: "a label without the v, as a Helm chart's appVersion reads, is read too",
			served: labelled(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), KustomizeGroup, "kustomizations", "2.9.0"),
			want:   target("2.9", SourceClusterLabel),
		},
		"LabelOfAPreRelease": {
			reason: "a release candidate belongs to its minor release",
			served: labelled(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1", "v1beta2"), KustomizeGroup, "kustomizations", "v2.7.0-rc.2"),
			want:   target("2.7", SourceClusterLabel),
		},
		"LabelsDisagreeMidUpgrade": {
			reason: "while an upgrade relabels the CRDs one by one, the oldest release wins, so nothing a CRD still serves is refused",
			served: labelled(labelled(withServed(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), HelmGroup, "helmreleases", "v2", "v2beta2"),
				KustomizeGroup, "kustomizations", "v2.8.0"), HelmGroup, "helmreleases", "v2.7.0"),
			want: target("2.7", SourceClusterLabel),
		},
		"LabelNewerThanTheTable": {
			reason: "a release newer than the table is the target (it reads the newest column)",
			served: labelled(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), KustomizeGroup, "kustomizations", "v2.11.0"),
			want:   target("2.11", SourceClusterLabel),
		},
		"ControllerVersionLabelIsNotAFluxRelease": {
			reason: "a label holding a controller's own version (v1.6.0) is no Flux 2 release: the served versions decide",
			served: labelled(withServed(emptyServed(), HelmGroup, "helmreleases", "v2", "v2beta1", "v2beta2"), HelmGroup, "helmreleases", "v1.3.0"),
			want:   target("2.6", SourceServedVersions),
		},
		"LabelOnANonFluxCRDIsIgnored": {
			reason: "only the labels of the Flux kinds in the table count",
			served: labelled(withServed(withServed(emptyServed(), "example.org", "widgets", "v1"), HelmGroup, "helmreleases", "v2", "v2beta2"),
				"example.org", "widgets", "v2.9.0"),
			want: target("2.7", SourceServedVersions),
		},
		"ImageV1ServedMeans27": {
			reason: "image v1 next to v1beta2 is served by 2.7 and 2.8, and so are the notification kinds' v1beta2 and v1beta3: the served versions cannot tell, so the range is named and 2.7 decided against",
			served: withServed(withServed(emptyServed(), ImageGroup, "imagepolicies", "v1", "v1beta2"), NotificationGroup, "alerts", "v1beta3", "v1beta2"),
			want:   ranged("2.7", "2.8", SourceServedVersions),
		},
		"OnlyCurrentVersionsMeansTheOldestRelease": {
			reason: "a kind served only at v1 matches 2.8, 2.9 and 2.10: without its CRD's schema the oldest is decided against, which refuses less, and the range is named",
			served: withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"),
			want:   ranged("2.8", "2.10", SourceServedVersions),
		},
		"KindsNarrowEachOther": {
			reason: "kustomize v1 only (2.8 to 2.10), Receiver without v1beta2 (2.9, 2.10) and Alert at v1beta3 only (2.9) together are 2.9",
			served: withServed(withServed(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), NotificationGroup, "receivers", "v1"),
				NotificationGroup, "alerts", "v1beta3"),
			want: target("2.9", SourceServedVersions),
		},
		"MixedReleasesTakeTheOldest": {
			reason: "CRDs of different releases (an upgrade under way) match no one release: the oldest any matches",
			served: withServed(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1"), HelmGroup, "helmreleases", "v2", "v2beta1", "v2beta2"),
			want:   target("2.6", SourceServedVersions),
		},
		"UnknownShapeIsIgnored": {
			reason: "a kind served in a shape no release in the table has tells nothing",
			served: withServed(withServed(emptyServed(), KustomizeGroup, "kustomizations", "v1", "v2alpha1"), HelmGroup, "helmreleases", "v2", "v2beta2"),
			want:   target("2.7", SourceServedVersions),
		},
		"OnlyUnknownShapesMeanTheDefault": {
			reason: "Flux CRDs that match no release leave the default",
			served: withServed(emptyServed(), KustomizeGroup, "kustomizations", "v3"),
			want:   target("2.6", SourceDefault),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClusterTarget(tc.served, nil)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPinnedTargetIsNotFollowed: a configured fluxVersion is the target
// whatever the cluster runs; without one the rule starts at the default
// and follows what it is given.
func TestPinnedTargetIsNotFollowed(t *testing.T) {
	pinned := New(Config{FluxVersion: "2.8"})
	if got, want := pinned.Target(), target("2.8", SourceConfig); got != want {
		t.Errorf("pinned: target %v, want %v", got, want)
	}
	if pinned.pin == nil {
		t.Error("a configured fluxVersion must pin the target")
	}
	following := New(Config{})
	if got, want := following.Target(), target("2.6", SourceDefault); got != want {
		t.Errorf("unpinned before discovery: target %v, want %v", got, want)
	}
	if following.readyCheck(nil) == nil {
		t.Error("ready before the target was chosen from the cluster")
	}
	following.follow(ClusterTarget(servedFrom(t, "2.7", "v2.7.0"), nil))
	if got, want := following.Target(), target("2.7", SourceClusterLabel); got != want {
		t.Errorf("unpinned after discovery: target %v, want %v", got, want)
	}
	if err := following.readyCheck(nil); err != nil {
		t.Errorf("not ready after the target was chosen: %v", err)
	}
}

// TestAdviceFollowsTheClusterRelease: the same write through image v1beta2 is left
// alone while the cluster runs 2.6 (its current version), and advised
// toward v1 once the cluster runs 2.7; the metric names the target.
func TestAdviceFollowsTheClusterRelease(t *testing.T) {
	r := New(Config{})
	policy := LookupKind(ImageGroup, "ImagePolicy")
	req := func() admission.Request {
		return admissiontest.Create(gvr(policy, "v1beta2"), "ImagePolicy", obj(policy, "v1beta2", nil, map[string]any{"interval": "5m"})).Build()
	}
	r.follow(ClusterTarget(servedFrom(t, "2.6", "v2.6.0"), nil))
	if resp := ruletest.Judge(context.Background(), r, req()); len(resp.Warnings) != 0 || len(resp.Patches) != 0 {
		t.Errorf("at 2.6, image v1beta2 is current: warnings %q, patches %v", resp.Warnings, resp.Patches)
	}
	assertTargetInfo(t, r, "2.6", SourceClusterLabel)

	r.follow(ClusterTarget(servedFrom(t, "2.7", "v2.7.0"), nil))
	resp := ruletest.Judge(context.Background(), r, req())
	want := []string{"apimigration: image.toolkit.fluxcd.io/v1beta2 is deprecated and removed in Flux 2.9; use v1 (flux migrate)"}
	if diff := cmp.Diff(want, resp.Warnings); diff != "" {
		t.Errorf("at 2.7 (-want +got):\n%s", diff)
	}
	assertTargetInfo(t, r, "2.7", SourceClusterLabel)
}

// TestARangeIsNamedWhereverTheTargetIsShown: with only image-reflector's
// CRDs of 2.9 installed, unlabelled, the cluster may run 2.9 or 2.10; the
// metric and the refusal say so, and the decision is 2.9's.
func TestARangeIsNamedWhereverTheTargetIsShown(t *testing.T) {
	r := New(Config{})
	r.follow(ClusterTarget(clusterFrom(t, "2.9", "", "ImageRepository", "ImagePolicy")))
	assertTargetInfo(t, r, "2.9 or 2.10", SourceServedVersions)
	policy := LookupKind(ImageGroup, "ImagePolicy")
	resp := ruletest.Judge(context.Background(), r, admissiontest.Create(gvr(policy, "v1beta2"), "ImagePolicy", obj(policy, "v1beta2", nil, map[string]any{"interval": "5m"})).Build())
	want := "apimigration: ImagePolicy apps/podinfo is written through image.toolkit.fluxcd.io/v1beta2, which Flux 2.9 removed (this cluster targets Flux 2.9 or 2.10); " +
		"change apiVersion to image.toolkit.fluxcd.io/v1 in the manifest it comes from (`flux migrate -f <dir>` rewrites a checkout, `flux migrate` the stored objects)"
	if resp.Allowed || resp.Result.Message != want {
		t.Errorf("allowed=%v, message:\n%s\nwant:\n%s", resp.Allowed, resp.Result.Message, want)
	}
}

func assertTargetInfo(t *testing.T, r *Rule, release string, source Source) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	n, err := testutil.GatherAndCount(reg, "steward_apimigration_target_info")
	if err != nil || n != 1 {
		t.Fatalf("target info series: %d, %v; want exactly one", n, err)
	}
	m := &dtoMetric{}
	if err := m.read(reg); err != nil {
		t.Fatal(err)
	}
	if m.labels["flux_version"] != release || m.labels["source"] != string(source) || m.value != 1 {
		t.Errorf("steward_apimigration_target_info%v = %v, want {flux_version=%q, source=%q} = 1", m.labels, m.value, release, source)
	}
}

// dtoMetric is the one series of steward_apimigration_target_info.
type dtoMetric struct {
	labels map[string]string
	value  float64
}

func (m *dtoMetric) read(reg *prometheus.Registry) error {
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	m.labels = map[string]string{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				m.labels[l.GetName()] = l.GetValue()
			}
			m.value = s.GetGauge().GetValue()
		}
	}
	return nil
}

// TestTargetChangesWhileRequestsAreInFlight swaps the target while
// requests are decided (run with -race): every answer is one target's
// answer, never a mix.
func TestTargetChangesWhileRequestsAreInFlight(t *testing.T) {
	r := New(Config{})
	policy := LookupKind(ImageGroup, "ImagePolicy")
	req := admissiontest.Create(gvr(policy, "v1beta2"), "ImagePolicy", obj(policy, "v1beta2", nil, map[string]any{"interval": "5m"})).Build()
	at26, at27 := ClusterTarget(servedFrom(t, "2.6", "v2.6.0"), nil), ClusterTarget(servedFrom(t, "2.7", "v2.7.0"), nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				r.follow(at26)
			} else {
				r.follow(at27)
			}
		}
	}()
	for range 2000 {
		resp := ruletest.Judge(context.Background(), r, req)
		if !resp.Allowed || (len(resp.Warnings) == 0) != (len(resp.Patches) == 0) {
			t.Fatalf("a mixed answer: allowed=%v warnings=%q patches=%v", resp.Allowed, resp.Warnings, resp.Patches)
		}
	}
	close(stop)
	wg.Wait()
}

// TestReloadedRuleTakesOverTheFollowedRelease: a rule built from a reloaded
// configuration inherits the running rule's view of the cluster. Dropping
// the pin makes it decide against the release the running rule's loop has
// followed, the metric reports the rule in use, and the loop keeps feeding
// the heir.
func TestReloadedRuleTakesOverTheFollowedRelease(t *testing.T) {
	running := New(Config{FluxVersion: "2.9"})
	if err := running.readyCheck(nil); err != nil {
		t.Errorf("a pinned rule must be ready before discovery: %v", err)
	}
	running.follow(ClusterTarget(servedFrom(t, "2.7", "v2.7.0"), nil))
	if got, want := running.Target(), target("2.9", SourceConfig); got != want {
		t.Errorf("pinned: target %v, want %v", got, want)
	}

	heir := New(Config{})
	if err := heir.Inherit(running); err != nil {
		t.Fatal(err)
	}
	if got, want := heir.Target(), target("2.7", SourceClusterLabel); got != want {
		t.Errorf("unpinned heir: target %v, want %v (the release the running rule followed)", got, want)
	}
	assertTargetInfo(t, running, "2.7", SourceClusterLabel)
	if err := heir.readyCheck(nil); err != nil {
		t.Errorf("heir not ready after the release was followed: %v", err)
	}
	running.follow(ClusterTarget(servedFrom(t, "2.8", "v2.8.0"), nil))
	if got, want := heir.Target(), target("2.8", SourceClusterLabel); got != want {
		t.Errorf("after an upgrade: heir's target %v, want %v", got, want)
	}

	pinnedAgain := New(Config{FluxVersion: "2.6"})
	if err := pinnedAgain.Inherit(heir); err != nil {
		t.Fatal(err)
	}
	assertTargetInfo(t, running, "2.6", SourceConfig)
	if err := pinnedAgain.Inherit(otherRule{New(Config{})}); err == nil {
		t.Error("inheriting from another rule type must fail")
	}
}

// otherRule is a rule of another type, which apimigration cannot inherit from.
type otherRule struct{ *Rule }
