// Package gitops is the engine of Steward's GitOps guards (fleetguard,
// fluxguard, argocdguard): one way to judge a write to an object a GitOps
// tool deployed, whichever tool it is.
//
// A guard is a Guard with one Resolver per tool. The resolver reads the
// tool's ownership markers on an object (Fleet's object-set keys, Flux's
// labels, Argo CD's tracking id) and checks them against the owner's own
// record (Flux's inventory, Argo CD's self-referencing id and
// Application); the Guard does the rest the same way for every tool: the
// identities that may write, the write paths (create, update, delete and
// the subresources that store an object), stripping and forging of
// markers, injected owner references, deliberate opt-outs, paused owners,
// the diff with its skip paths, and the one-line denial.
//
// What the guards have in common around the Guard is here too, so that a
// guard package holds only its resolver, its own settings and its README:
// the settings every guard has (Settings, which each guard's Config
// embeds), its webhooks (ObjectWebhook, ByWriter, ScaleWebhook,
// RecordWebhook), the cache of the tool's records and its hand-over on a
// configuration reload (Caches, Keep, Lookup, Inherit), and the audit
// (AuditCached, KindLists, WithFights).
package gitops
