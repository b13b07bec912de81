// Package serving owns Steward's request path, from the HTTP request the
// API server sends to a rule's Handle and back, for every rule alike:
//
//   - inflight.go: the memory budget for request bodies in flight, charged
//     before a body is read (InflightLimit);
//   - serve.go: the body deadline, reading and decoding the AdmissionReview
//     (its two objects only located, for the rules' object.Views), and
//     writing the answer (Serve);
//   - table.go: which handler answers at each path under the configuration
//     in effect, swapped all at once on a reload (Table);
//   - decide.go: modes, exemptions, break-glass, audit annotations, the
//     decision log line and metrics around a rule, which it calls through a
//     reused rule.Request (Wrap, Judge);
//   - events.go: Events for refused writes of service accounts
//     (DenialEvents);
//   - metrics.go: the decision metrics, a collector the server registers
//     (Metrics).
//
// Rules never see HTTP or the review: they answer a rule.Request.
package serving
