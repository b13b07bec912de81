package claimguard

import (
	"k8s.io/client-go/tools/cache"
)

// The informer indexes claimguard's checks look objects up by.
const (
	// indexOwner maps "group/Kind/name" of a controller owner to the
	// objects it composed (every cached object).
	indexOwner = "owner"
	// indexClaim maps "namespace/name" of a claim to the objects labelled
	// for it: every composite resource, but only managed resources that are
	// being deleted, since only those matter and there are many more.
	indexClaim = "claim"
	// indexExternalName maps crossplane.io/external-name to the objects
	// with that name that are being deleted; live objects are never looked
	// up by external name, so they stay out of the index.
	indexExternalName = "externalName"
)

// compositeIndexers are the indexes of composite resource informers.
func compositeIndexers() cache.Indexers {
	return cache.Indexers{
		indexOwner:        byOwner,
		indexClaim:        byClaim,
		indexExternalName: byTerminatingExternalName,
	}
}

// managedIndexers are the indexes of managed resource informers.
func managedIndexers() cache.Indexers {
	return cache.Indexers{
		indexOwner:        byOwner,
		indexClaim:        byTerminatingClaim,
		indexExternalName: byTerminatingExternalName,
	}
}

func one(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func byOwner(obj any) ([]string, error) {
	if o, ok := obj.(*object); ok {
		return one(o.owner), nil
	}
	return nil, nil
}

func byClaim(obj any) ([]string, error) {
	if o, ok := obj.(*object); ok {
		return one(o.claim), nil
	}
	return nil, nil
}

func byTerminatingClaim(obj any) ([]string, error) {
	if o, ok := obj.(*object); ok && o.deleting() {
		return one(o.claim), nil
	}
	return nil, nil
}

func byTerminatingExternalName(obj any) ([]string, error) {
	if o, ok := obj.(*object); ok && o.deleting() {
		return one(o.externalName), nil
	}
	return nil, nil
}
