package ruletest

import (
	"context"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stewardhq/steward/webhooks/rule"
	"github.com/stewardhq/steward/webhooks/serving"
)

// Judge asks r about req as the server does, but through a Request of its
// own where the server reuses its call's, and without the server's modes,
// exemptions and metrics: what a rule's own tests check.
func Judge(ctx context.Context, r rule.Rule, req admission.Request) admission.Response {
	return r.Handle(ctx, rule.NewRequest(req))
}

// Handler is what the server answers at wh's path (one of r's webhooks)
// when r is its only rule, in mode, with s: the serving layer's failure
// policy, exemptions, break-glass, mode, audit annotations and decision
// counter around r. metrics counts the decisions; nil counts them nowhere.
func Handler(r rule.Rule, wh rule.Webhook, mode rule.Mode, s serving.Settings, metrics *serving.Metrics) admission.Handler {
	if metrics == nil {
		metrics = serving.NewMetrics()
	}
	return serving.NewTable([]serving.Served{{Rule: r, Mode: mode}}, s, nil, metrics, logr.Discard()).Handler(wh.Path)
}
