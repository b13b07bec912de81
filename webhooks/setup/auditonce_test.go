package setup

import (
	"errors"
	"testing"
	"time"

	"github.com/stewardhq/steward/webhooks/audit"
)

func TestAuditNamesTheRulesThatCouldNotAnswer(t *testing.T) {
	err := notAnswered(audit.Pass{
		{Rule: "suspendnotice"},
		{Rule: "installplanguard", Err: errors.New("installplanguard: informer for operators.coreos.com/v1alpha1, Resource=subscriptions has not synced")},
		{Rule: "fleetguard", Err: errors.New("cache not synced")},
	}, time.Minute)
	want := "rules could not answer within --timeout 1m0s (their caches did not sync: may this identity list and watch what they read?):\n" +
		"  installplanguard: informer for operators.coreos.com/v1alpha1, Resource=subscriptions has not synced\n" +
		"  fleetguard: cache not synced"
	if err == nil || err.Error() != want {
		t.Errorf("notAnswered = %v\nwant %s", err, want)
	}
}
