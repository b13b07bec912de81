// Package serving owns Steward's request path, from the HTTP request the
// API server sends to a rule's Handle and back, for every rule alike. A
// request passes through two files:
//
//   - serve.go: the HTTP side. The drain (Drain: answers close their
//     connections while a replica shuts down), the memory budget for
//     request bodies in flight, charged before a body is read
//     (InflightLimit), the body deadline, reading and decoding the
//     AdmissionReview (its two objects only located, for the rules'
//     object.Views) into a reused call, the handler of the configuration
//     in effect, and writing the answer (Table.HTTP);
//   - decide.go: around the rule. Modes, exemptions, break-glass, audit
//     annotations, the decision log line and metrics, and which refusals
//     get an Event (Wrap); the rule is asked through the call's
//     rule.Request.
//
// Set up once, off the request path: table.go, which handler answers at
// each path under the configuration in effect, swapped all at once on a
// reload (Table); events.go, the sender of Events for refused writes of
// service accounts (DenialEvents); metrics.go, the decision metrics, a
// collector the server registers (Metrics).
//
// Rules never see HTTP or the review: they answer a rule.Request.
package serving
