package apimigration

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestWarningFitsOnOneLine holds every deprecated version's warning to 120
// characters and to naming what the issue asks: the deprecated version, the
// current one, the removing release and the migration command.
func TestWarningFitsOnOneLine(t *testing.T) {
	for _, a := range apis {
		for _, r := range releases {
			for _, v := range a.Versions() {
				f := Classify(a.Group, a.Kind, v, r)
				if f.Status != DeprecatedVersion {
					continue
				}
				w := f.Warning()
				if len(w) > 120 {
					t.Errorf("%s: warning is %d characters: %q", f.From(), len(w), w)
				}
				parts := []string{a.Group + "/" + v, "use " + a.Preferred(r)}
				if f.RemovedIn != (Release{}) {
					parts = append(parts, "removed in Flux "+f.RemovedIn.String())
				} else if strings.Contains(w, "removed") {
					t.Errorf("%s at Flux %s: warning %q names a removal no release of the table makes", f.From(), r, w)
				}
				if r.AtLeast(FluxMigrateSince()) {
					parts = append(parts, "(flux migrate)")
				} else if strings.Contains(w, "flux migrate") {
					t.Errorf("%s at Flux %s: warning %q advises flux migrate, which Flux %s does not have", f.From(), r, w, r)
				}
				for _, part := range parts {
					if !strings.Contains(w, part) {
						t.Errorf("%s at Flux %s: warning %q does not name %q", f.From(), r, w, part)
					}
				}
			}
		}
	}
}

// TestClassify pins the table to the design: what each release removes.
func TestClassify(t *testing.T) {
	cases := map[string]struct {
		reason                string
		group, kind, version  string
		target                string
		want                  Status
		wantRemovedIn, wantTo string
	}{
		"HelmV2beta1DeprecatedBefore27": {"removed in 2.7", HelmGroup, "HelmRelease", "v2beta1", "2.6", DeprecatedVersion, "2.7", HelmGroup + "/v2"},
		"HelmV2beta1RemovedIn27":        {"removed in 2.7", HelmGroup, "HelmRelease", "v2beta1", "2.7", RemovedVersion, "2.7", HelmGroup + "/v2"},
		"HelmV2beta2DeprecatedIn27":     {"removed in 2.8", HelmGroup, "HelmRelease", "v2beta2", "2.7", DeprecatedVersion, "2.8", HelmGroup + "/v2"},
		"HelmV2beta2RemovedIn28":        {"removed in 2.8", HelmGroup, "HelmRelease", "v2beta2", "2.8", RemovedVersion, "2.8", HelmGroup + "/v2"},
		"HelmV2Current":                 {"current", HelmGroup, "HelmRelease", "v2", "3.0", Untouched, "0.0", HelmGroup + "/v2"},
		"KustomizationV1beta2RemovedIn28": {"kustomize v1beta2 goes in 2.8", KustomizeGroup, "Kustomization", "v1beta2", "2.8",
			RemovedVersion, "2.8", KustomizeGroup + "/v1"},
		"OCIRepositoryV1beta2DeprecatedIn27": {"source v1beta2 goes in 2.8", SourceGroup, "OCIRepository", "v1beta2", "2.7",
			DeprecatedVersion, "2.8", SourceGroup + "/v1"},
		"AlertV1beta2DeprecatedIn28": {"notification v1beta2 goes in 2.9", NotificationGroup, "Alert", "v1beta2", "2.8",
			DeprecatedVersion, "2.9", NotificationGroup + "/v1beta3"},
		"AlertV1beta3Current": {"Alert's current version is v1beta3", NotificationGroup, "Alert", "v1beta3", "2.9", Untouched, "0.0",
			NotificationGroup + "/v1beta3"},
		"AlertV1beta3DeprecatedIn210": {"Flux 2.10 stores Alert at v1 and marks v1beta3 deprecated; no release of the table removes it",
			NotificationGroup, "Alert", "v1beta3", "2.10", DeprecatedVersion, "0.0", NotificationGroup + "/v1"},
		"ProviderV1Current210": {"Provider v1 is 2.10's storage version", NotificationGroup, "Provider", "v1", "2.10", Untouched, "0.0",
			NotificationGroup + "/v1"},
		"AlertV1beta2RemovedIn29At210": {"notification v1beta2 stays removed, and is told to move to v1 at 2.10", NotificationGroup, "Alert", "v1beta2", "2.10",
			RemovedVersion, "2.9", NotificationGroup + "/v1"},
		"ReceiverV1beta1RemovedIn27": {"v1beta1 goes in 2.7 everywhere", NotificationGroup, "Receiver", "v1beta1", "2.7",
			RemovedVersion, "2.7", NotificationGroup + "/v1"},
		"ImagePolicyV1beta2RemovedIn29": {"image v1beta2 goes in 2.9", ImageGroup, "ImagePolicy", "v1beta2", "2.9",
			RemovedVersion, "2.9", ImageGroup + "/v1"},
		"LaterMajorRemovesEverything": {"a Flux 3 target is past every removal", SourceGroup, "Bucket", "v1beta2", "3.0",
			RemovedVersion, "2.8", SourceGroup + "/v1"},
		"UnknownNewerVersionUntouched": {"a version newer than the table is not refused", KustomizeGroup, "Kustomization", "v2", "2.9",
			Untouched, "0.0", KustomizeGroup + "/v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := Classify(tc.group, tc.kind, tc.version, MustParseRelease(tc.target))
			got := []string{f.Status.String(), f.RemovedIn.String(), f.To()}
			if diff := cmp.Diff([]string{tc.want.String(), tc.wantRemovedIn, tc.wantTo}, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
	if f := Classify("apps", "Deployment", "v1", MustParseRelease("2.9")); f.Status != Untouched || f.API != nil {
		t.Errorf("non-Flux kind: %+v", f)
	}
}

// TestParseRelease covers the accepted spellings and the refused ones.
func TestParseRelease(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string
		wantErr string
	}{
		"MajorMinor":        {in: "2.8", want: "2.8"},
		"VPrefix":           {in: "v2.8", want: "2.8"},
		"PatchIgnored":      {in: "2.8.3", want: "2.8"},
		"VPrefixWithPatch":  {in: "v2.10.0", want: "2.10"},
		"Empty":             {in: "", wantErr: "not a Flux release"},
		"MajorOnly":         {in: "2", wantErr: "not a Flux release"},
		"Wildcard":          {in: "2.x", wantErr: "not a Flux release"},
		"Spaces":            {in: " 2.8", wantErr: "not a Flux release"},
		"Flux1":             {in: "1.25", wantErr: "not a Flux 2 release"},
		"PreReleaseSuffix":  {in: "2.8.0-rc.1", wantErr: "not a Flux release"},
		"NumberTooLong":     {in: "2.12345", wantErr: "not a Flux release"},
		"TrailingDotOnly":   {in: "2.8.", wantErr: "not a Flux release"},
		"LeadingZeroesOkay": {in: "02.08", want: "2.8"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := ParseRelease(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRelease(%q) = %v, %v; want error %q", tc.in, r, err, tc.wantErr)
				}
				return
			}
			if err != nil || r.String() != tc.want {
				t.Fatalf("ParseRelease(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
			}
		})
	}
}

// TestSpec proves the registration the issue asks for: mutating, every
// Flux kind of the table listed explicitly with all versions, CREATE and
// UPDATE, matchPolicy Equivalent, reinvocation IfNeeded, and a failure
// policy that never blocks Flux.
func TestSpec(t *testing.T) {
	s := New(Config{}).Spec()
	if s.Name != Name || s.Type != "Mutating" || len(s.Webhooks) != 1 {
		t.Fatalf("spec = %+v", s)
	}
	wh := s.Webhooks[0]
	if wh.Name != "apimigration.steward.dev" || wh.Path != "/mutate/apimigration" {
		t.Errorf("name/path = %s %s", wh.Name, wh.Path)
	}
	if wh.MatchPolicy != admissionregistrationv1.Equivalent || wh.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy ||
		wh.FailurePolicy != admissionregistrationv1.Ignore || wh.FailurePolicyReason == "" || wh.TimeoutSeconds < 1 || wh.TimeoutSeconds > 2 {
		t.Errorf("policies = %+v", wh)
	}
	got := map[string]bool{}
	for _, r := range wh.Rules {
		if diff := cmp.Diff([]admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, r.Operations); diff != "" {
			t.Errorf("operations: %s", diff)
		}
		if diff := cmp.Diff([]string{"*"}, r.APIVersions); diff != "" {
			t.Errorf("versions: %s", diff)
		}
		if r.Scope == nil || *r.Scope != admissionregistrationv1.NamespacedScope {
			t.Errorf("scope = %v", r.Scope)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if strings.ContainsAny(res, "*/") {
					t.Errorf("resource %q: resources are listed explicitly, subresources never", res)
				}
				got[g+"/"+res] = true
			}
		}
	}
	want := map[string]bool{}
	for _, a := range apis {
		want[a.Group+"/"+a.Resource] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources -want +got:\n%s", diff)
	}
	if len(wh.MatchConditions) != 1 {
		t.Fatalf("match conditions = %v", wh.MatchConditions)
	}
	expr := wh.MatchConditions[0].Expression
	for _, a := range apis {
		for _, v := range a.Guarded() {
			if !strings.Contains(expr, "'"+a.Group+"/"+a.Resource+"/"+v+"'") {
				t.Errorf("match condition misses %s/%s/%s", a.Group, a.Resource, v)
			}
		}
		if strings.Contains(expr, "'"+a.Group+"/"+a.Resource+"/"+a.Preferred(NewestRelease())+"'") {
			t.Errorf("match condition sends the current version of %s", a.Kind)
		}
	}
}
