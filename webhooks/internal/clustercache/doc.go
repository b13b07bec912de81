// Package clustercache is the one place Steward's rules hold cluster state
// that the manager's cache cannot: objects of kinds the cluster may or may
// not serve, at whichever version it serves them now.
//
// A Cache asks discovery which resources are served (one discovery client,
// created once from the manager's config and HTTP client), watches
// CustomResourceDefinitions (metadata only, keeping each one's name and its
// app.kubernetes.io/version label) to ask again when a kind is added,
// removed or changes its served versions or its label, and runs informers
// for the rules over metadata and dynamic clients it also creates once.
// Rules get the Cache through ManagerSetup and use it in one of three
// ways:
//
//   - Follow: a fixed list of resources (suspendnotice's Flux kinds,
//     installplanguard's InstallPlans), each watched once served, at the
//     version the server prefers; when an upgrade changes that version the
//     informer moves to it, and the old one keeps answering until the new
//     one has synced.
//   - Watch and Served: claimguard decides from each discovery answer which
//     kinds to watch (the "managed" category, the XRDs' composite kinds) and
//     starts and stops watches itself; Subscribe tells it when to decide
//     again.
//   - Served and Subscribe alone: apimigration reads which Flux release
//     the cluster runs from the Flux CRDs' labels and served versions.
//
// Why not the controller-runtime manager's cache, which can also add and
// remove informers at run time (GetInformer, RemoveInformer)? Four reasons,
// each of which would change what Steward does:
//
//   - Readiness. The manager's cache reports synced only when every one of
//     its informers has, and Steward's readiness check waits for it. An
//     informer for a kind Steward may not list (RBAC) or one that appeared
//     after start-up would then keep every replica unready; here readiness
//     waits only for the kinds served at start-up, and claimguard bounds
//     even those by time.
//   - Transforms. The manager's cache picks an informer's transform from
//     options fixed when the manager is built (per object type, or one
//     default); claimguard's kinds are unknown until discovery runs, and its
//     transform keeps a small struct, not the object.
//   - RBAC. A watch error handler can be set only once for the whole cache,
//     so one kind being forbidden could not be told from another.
//   - Versions. The manager's cache maps a kind to a resource through its
//     REST mapper and keys informers by kind and version; following a CRD
//     from one served version to another needs discovery anyway.
//
// # What is watched, and readiness
//
// Every informer a Set runs is in the metric steward_watched_kinds{rule,
// group,resource,version,state} (Set.Collector, registered per rule
// through rule.MetricsCollector): synced, syncing (the first list is not
// stored yet, or lists keep failing: a conversion webhook down, an API
// server that cannot serve the version), or forbidden (Steward may not
// list or watch it). The state follows the informer both ways: it is
// forbidden or syncing when a list or watch fails after the first sync,
// and synced again when a list or a watch event comes through. While an
// upgrade moves an informer to another version, both versions have a
// series. claimguard, whose kinds are open-ended (every managed kind of
// every provider), counts its informers by role in
// steward_claimguard_watched_kinds instead of one series per kind; the
// alert StewardWatchedKindNotSyncing covers both.
//
// The decisions behind readiness (Set.Ready):
//
//   - A kind that is not served is not watched: no informer, no series,
//     no effect on readiness. That covers a Flux or OLM CRD that is not
//     installed, and one that is deleted, or whose last served version is
//     removed, while Steward runs: optional CRDs come and go, and a
//     replica that went unready over one would answer no webhook at all.
//   - A kind served when Steward starts holds readiness back until its
//     first list is stored, so a new replica does not answer from an
//     empty cache; but not for a kind Steward may not list (forbidden: no
//     wait would end it) and not for more than a minute for a kind whose
//     lists keep failing, as claimguard bounds its own.
//   - After that, readiness never changes with a kind: one that becomes
//     forbidden or fails keeps answering from what it last stored, and one
//     that appears later answers once synced ("not found" until then).
//     The metric and the alert tell an operator; readiness would only
//     take every webhook away.
//
// # Start-up memory
//
// An informer's first list, when the API server does not stream it
// (WatchList), would be held whole, every object as the API server sent
// it, before the transform trims it. Every informer here, and every one
// of the manager's cache (NewPagedInformer), lists in pages of PageSize
// instead and transforms each page before asking for the next
// (pagedlist.go), so start-up holds at most one page of untrimmed
// objects. A Watch also streams its list itself where the API server
// can (streamlist.go): client-go's reflector would hold the streamed
// objects in a temporary store and two more arrays before the store had
// them. Readiness is unchanged: a kind is syncing, and holds readiness
// back as above, until its first list is stored.
//
// fleetguard keeps using the manager's cache: its kinds are built in, always
// served, and narrowed by a label selector the manager's cache applies.
//
// Nothing here is called on the request path except reads of informer
// stores.
package clustercache
