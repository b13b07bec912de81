package certs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDesiredBundle(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	current := newTestCA(t, now.Add(-time.Hour), now.Add(365*24*time.Hour))
	previous := newTestCA(t, now.Add(-300*24*time.Hour), now.Add(20*24*time.Hour))
	older := newTestCA(t, now.Add(-600*24*time.Hour), now.Add(5*24*time.Hour))
	oldest := newTestCA(t, now.Add(-700*24*time.Hour), now.Add(2*24*time.Hour))
	expired := newTestCA(t, now.Add(-400*24*time.Hour), now.Add(-time.Minute))
	leaf := current.leaf(t, now.Add(-time.Hour), now.Add(24*time.Hour))

	pemOf := func(cas ...testCA) []byte {
		var s caSet
		for _, c := range cas {
			s = append(s, c.Cert)
		}
		return s.pem()
	}
	names := map[string]string{}
	for name, c := range map[string]testCA{"current": current, "previous": previous, "older": older, "oldest": oldest, "expired": expired} {
		names[string(c.Cert.Raw)] = name
	}

	tests := map[string]struct {
		reason   string
		existing [][]byte
		want     []string
	}{
		"EmptyBundle": {
			reason: "A webhook registered without a caBundle gets the current CA.",
			want:   []string{"current"},
		},
		"PreviousCAKept": {
			reason:   "After a CA rotation the previous CA stays trusted: replicas may still serve a certificate it signed.",
			existing: [][]byte{pemOf(previous)},
			want:     []string{"current", "previous"},
		},
		"ExpiredCADropped": {
			reason:   "An expired CA can no longer verify anything, so it leaves the bundle.",
			existing: [][]byte{pemOf(previous, expired)},
			want:     []string{"current", "previous"},
		},
		"NewestKeptWhenOverCap": {
			reason:   "At most three CAs: the current one and the newest before it.",
			existing: [][]byte{pemOf(oldest, older, previous)},
			want:     []string{"current", "previous", "older"},
		},
		"DuplicatesAcrossWebhooksMerged": {
			reason:   "Every webhook's bundle counts, each CA once.",
			existing: [][]byte{pemOf(current, previous), pemOf(previous), nil},
			want:     []string{"current", "previous"},
		},
		"JunkDropped": {
			reason:   "Non-CA certificates and unparsable text do not survive.",
			existing: [][]byte{append(append([]byte("garbage\n"), leaf.cert...), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")...)},
			want:     []string{"current"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := desiredBundle(current.Cert, tc.existing, now)
			var gotNames []string
			for _, c := range got {
				gotNames = append(gotNames, names[string(c.Raw)])
			}
			if diff := cmp.Diff(tc.want, gotNames); diff != "" {
				t.Errorf("%s\ndesiredBundle(...) (-want +got):\n%s", tc.reason, diff)
			}
			if round := parseCertificates(got.pem()); len(round) != len(got) {
				t.Errorf("pem() round trip lost certificates: %d of %d", len(round), len(got))
			}
		})
	}
}

func TestBundleSameAsIgnoresOrder(t *testing.T) {
	now := time.Now()
	a := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	b := newTestCA(t, now.Add(-2*time.Hour), now.Add(time.Hour))
	set := caSet{a.Cert, b.Cert}
	tests := map[string]struct {
		reason string
		bundle []byte
		want   bool
	}{
		"SameOrder":  {"Identical bundles are the same.", caSet{a.Cert, b.Cert}.pem(), true},
		"OtherOrder": {"Order does not matter to the API server, so replicas never fight over it.", caSet{b.Cert, a.Cert}.pem(), true},
		"Missing":    {"A bundle lacking a CA differs.", caSet{a.Cert}.pem(), false},
		"Extra":      {"A bundle with an extra CA differs.", caSet{a.Cert, b.Cert, newTestCA(t, now, now.Add(time.Hour)).Cert}.pem(), false},
		"Empty":      {"An empty bundle differs.", nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := set.sameAs(tc.bundle); got != tc.want {
				t.Errorf("%s\nsameAs = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

func TestParseCARefusesLeaf(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), now.Add(time.Hour))
	if _, ok := parseCA(ca.CertPEM); !ok {
		t.Error("parseCA refused a CA")
	}
	if _, ok := parseCA(ca.leaf(t, now.Add(-time.Hour), now.Add(time.Hour)).cert); ok {
		t.Error("parseCA accepted a serving certificate")
	}
}
