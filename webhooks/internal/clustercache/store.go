package clustercache

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// sink applies what a Watch's queue gives to its store and tells the
// handler, as a shared informer does for each of its handlers: an object
// already stored is an update (a relist's too), one that is not is an add.
type sink struct {
	indexer cache.Indexer
	keyFunc cache.KeyFunc
	handler cache.ResourceEventHandler
	prepare func(obj any)
}

func (s *sink) apply(deltas cache.Deltas, isInInitialList bool) error {
	for _, d := range deltas {
		switch d.Type {
		case cache.ReplacedAll:
			info, ok := d.Object.(cache.ReplacedAllInfo)
			if !ok {
				return fmt.Errorf("a list came as %T, not ReplacedAllInfo", d.Object)
			}
			if err := s.replaceAll(info.Objects, isInInitialList); err != nil {
				return err
			}
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			if err := s.put(d.Object, isInInitialList); err != nil {
				return err
			}
		case cache.Deleted:
			if err := s.indexer.Delete(d.Object); err != nil {
				return err
			}
			s.handler.OnDelete(d.Object)
		case cache.SyncAll, cache.Bookmark:
			// Watches have no resync period and ask for no bookmark items.
		default:
			return fmt.Errorf("unexpected delta %q", d.Type)
		}
	}
	return nil
}

// put stores one object, as an add or an update.
func (s *sink) put(obj any, isInInitialList bool) error {
	old, exists, err := s.indexer.Get(obj)
	if err != nil {
		return err
	}
	if s.prepare != nil && (!exists || old != obj) {
		s.prepare(obj)
	}
	if exists {
		if err := s.indexer.Update(obj); err != nil {
			return err
		}
		s.handler.OnUpdate(old, obj)
		return nil
	}
	if err := s.indexer.Add(obj); err != nil {
		return err
	}
	s.handler.OnAdd(obj, isInInitialList)
	return nil
}

// replaceAll applies a list: what the store holds that the list lacks was
// deleted while the watch was down, and goes first, as a queue of single
// items would have it; then each listed object is stored. The first list
// finds the store empty and builds no set of keys.
func (s *sink) replaceAll(objs []any, isInInitialList bool) error {
	if keys := s.indexer.ListKeys(); len(keys) > 0 {
		listed := make(map[string]struct{}, len(objs))
		for _, obj := range objs {
			key, err := s.keyFunc(obj)
			if err != nil {
				return err
			}
			listed[key] = struct{}{}
		}
		for _, key := range keys {
			if _, ok := listed[key]; ok {
				continue
			}
			old, exists, err := s.indexer.GetByKey(key)
			if err != nil || !exists {
				continue
			}
			if err := s.indexer.Delete(old); err != nil {
				return err
			}
			s.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: old})
		}
	}
	for _, obj := range objs {
		if err := s.put(obj, isInInitialList); err != nil {
			return err
		}
	}
	return nil
}
