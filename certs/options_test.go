package certs

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidateNamesTheFlag(t *testing.T) {
	tests := map[string]struct {
		reason string
		modify func(*SelfManagedOptions)
		want   []string // each must appear in the error
	}{
		"Defaults": {
			reason: "The shipped defaults are valid.",
			modify: func(*SelfManagedOptions) {},
		},
		"ShortTestLifetimes": {
			reason: "Lifetimes of seconds, as the rotation tests use, are valid when their ratios are.",
			modify: func(o *SelfManagedOptions) {
				o.CAValidity, o.CertValidity, o.RenewBefore, o.CheckInterval, o.PropagationDelay = 40*time.Second, 40*time.Second, 15*time.Second, time.Second, 2*time.Second
			},
		},
		"EmptySecret": {
			reason: "The Secret name is required.",
			modify: func(o *SelfManagedOptions) { o.SecretName = "" },
			want:   []string{"--cert-secret: must not be empty"},
		},
		"BadNames": {
			reason: "Names must be valid Kubernetes names.",
			modify: func(o *SelfManagedOptions) {
				o.Namespace, o.ServiceName, o.ValidatingWebhookConfiguration = "Steward", "1steward", "Steward_Webhooks"
			},
			want: []string{"--namespace:", "--service-name:", "--webhook-config-name:"},
		},
		"EmptyMutatingName": {
			reason: "Both webhook configurations are named.",
			modify: func(o *SelfManagedOptions) { o.MutatingWebhookConfiguration = "" },
			want:   []string{"--webhook-config-name: must not be empty"},
		},
		"BadDNSName": {
			reason: "Extra DNS names must be DNS names.",
			modify: func(o *SelfManagedOptions) { o.ExtraDNSNames = []string{"localhost", "not a name"} },
			want:   []string{`--cert-dns-name: "not a name"`},
		},
		"EmptyCertDir": {
			reason: "The certificate directory is required.",
			modify: func(o *SelfManagedOptions) { o.CertDir = "" },
			want:   []string{"--cert-dir: must not be empty"},
		},
		"NonPositiveDurations": {
			reason: "Lifetimes and intervals must be positive.",
			modify: func(o *SelfManagedOptions) {
				o.CAValidity, o.CheckInterval, o.PropagationDelay = 0, -time.Second, -time.Second
			},
			want: []string{"--cert-ca-validity: must be positive", "--cert-check-interval: must be positive", "--cert-propagation-delay: must not be negative"},
		},
		"CATooShortForOverlap": {
			reason: "A CA must outlive two renewal windows, so at most two CAs are valid at once.",
			modify: func(o *SelfManagedOptions) { o.CAValidity = 50 * 24 * time.Hour },
			want:   []string{"--cert-ca-validity: 1200h0m0s must be more than twice --cert-renew-before"},
		},
		"CertShorterThanRenewal": {
			reason: "A certificate that is always inside its renewal window would be replaced at every check.",
			modify: func(o *SelfManagedOptions) { o.CertValidity = o.RenewBefore },
			want:   []string{"--cert-validity:"},
		},
		"CheckTooRare": {
			reason: "Expiry must be checked at least twice inside the renewal window.",
			modify: func(o *SelfManagedOptions) { o.CheckInterval = 20 * 24 * time.Hour },
			want:   []string{"--cert-check-interval:"},
		},
		"PropagationLongerThanRenewal": {
			reason: "The propagation delay must fit in the renewal window.",
			modify: func(o *SelfManagedOptions) { o.PropagationDelay = o.RenewBefore },
			want:   []string{"--cert-propagation-delay:"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := DefaultSelfManagedOptions()
			tc.modify(&o)
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("%s\nValidate() = %v, want nil", tc.reason, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s\nValidate() = nil, want errors %q", tc.reason, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s\nValidate() = %v\nwant it to contain %q", tc.reason, err, w)
				}
			}
		})
	}
}

func TestAddFlagsBindsEveryOption(t *testing.T) {
	o := DefaultSelfManagedOptions()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--namespace=ops", "--cert-secret=s", "--service-name=svc", "--cert-dir=/d",
		"--cert-dns-name=localhost", "--cert-dns-name=steward.example.com", "--webhook-config-name=w",
		"--cert-ca-validity=2h", "--cert-validity=1h", "--cert-renew-before=30m", "--cert-check-interval=1m",
		"--cert-propagation-delay=3s",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := SelfManagedOptions{
		Namespace: "ops", SecretName: "s", ServiceName: "svc", CertDir: "/d",
		ExtraDNSNames:                  []string{"localhost", "steward.example.com"},
		ValidatingWebhookConfiguration: "w", MutatingWebhookConfiguration: "w",
		CAValidity: 2 * time.Hour, CertValidity: time.Hour, RenewBefore: 30 * time.Minute, CheckInterval: time.Minute,
		PropagationDelay: 3 * time.Second,
	}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("parsed options (-want +got):\n%s", diff)
	}
}

func TestServingDNSNamesCoverTheServiceAndExtras(t *testing.T) {
	o := DefaultSelfManagedOptions()
	o.ExtraDNSNames = []string{"localhost", "steward.steward-system.svc"}
	want := []string{"steward", "steward.steward-system", "steward.steward-system.svc", "steward.steward-system.svc.cluster.local", "localhost"}
	if diff := cmp.Diff(want, o.servingDNSNames()); diff != "" {
		t.Errorf("servingDNSNames (-want +got):\n%s", diff)
	}
	verified, extra := o.rotatorDNSNames()
	if verified != "steward.steward-system.svc" {
		t.Errorf("the rotator verifies %q, want the name the API server uses for the Service", verified)
	}
	if diff := cmp.Diff([]string{"steward", "steward.steward-system", "steward.steward-system.svc.cluster.local", "localhost"}, extra); diff != "" {
		t.Errorf("extra names (-want +got):\n%s", diff)
	}
}
