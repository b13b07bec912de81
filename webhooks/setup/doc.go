// Package setup wires the rules a configuration selects into Steward's
// process and cluster:
//
//   - manager.go: sets the rules up in the controller-runtime manager, with
//     the one cluster cache every rule's informers share (WithManager), and
//     the paged informers of the manager's own cache (NewInformer);
//   - registration.go: what the manifests rendered for a configuration tell
//     the API server and grant Steward, to tell whether a reloaded
//     configuration needs new manifests (Registration).
//
// The request path is webhooks/serving's; which rules exist, and which a
// configuration turns on, is the rule list's (webhooks).
package setup
