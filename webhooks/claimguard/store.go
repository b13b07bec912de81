package claimguard

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// objectStore is the store of one claimguard watch: client-go's Indexer,
// holding only *object.
//
// client-go's own store keeps a map from each object's key, a string, to
// an interface value: 32 bytes a slot, about 55 with the map's spare room,
// for every cached object, which was a fifth of what claimguard kept per
// managed resource. This one maps a 64-bit hash of the key to the object,
// 16 bytes a slot, and compares the key the object holds on each lookup;
// an object whose key hashes like another's (a 64-bit hash: rarely, if
// ever) is kept in a small map by key instead. Its one index is
// indexExternalName over objects being deleted (byTerminatingExternalName),
// the only index claimguard's informers need.
type objectStore struct {
	mu       sync.RWMutex
	byHash   map[uint64]*object
	collided map[string]*object
	// deleting maps an external name to the objects being deleted with it.
	deleting map[string][]*object
	// rv is the resource version last seen (LastStoreSyncResourceVersion).
	rv string
	// hash hashes keys: maphash, but tests may make keys collide.
	hash func(string) uint64
}

var _ cache.Indexer = (*objectStore)(nil)

// keySeed seeds the stores' hashes; per process, so nobody can pick names
// that collide.
var keySeed = maphash.MakeSeed()

func newObjectStore() *objectStore {
	return &objectStore{byHash: map[uint64]*object{}, deleting: map[string][]*object{}, hash: hashKey}
}

func hashKey(key string) uint64 { return maphash.String(keySeed, key) }

// get returns the object stored under key, or nil.
func (s *objectStore) get(key string) *object {
	if o := s.byHash[s.hash(key)]; o != nil && o.key() == key {
		return o
	}
	return s.collided[key]
}

// put stores o, replacing the object stored under its key.
func (s *objectStore) put(o *object) {
	key := o.key()
	h := s.hash(key)
	cur := s.byHash[h]
	var old *object
	switch {
	case cur != nil && cur.key() == key:
		old, s.byHash[h] = cur, o
	case s.collided[key] != nil:
		old, s.collided[key] = s.collided[key], o
	case cur == nil:
		s.byHash[h] = o
	default:
		if s.collided == nil {
			s.collided = map[string]*object{}
		}
		s.collided[key] = o
	}
	s.unindex(old)
	if o.deleting() && o.externalName() != "" {
		s.deleting[o.externalName()] = append(s.deleting[o.externalName()], o)
	}
}

// remove drops the object stored under key.
func (s *objectStore) remove(key string) {
	h := s.hash(key)
	if cur := s.byHash[h]; cur != nil && cur.key() == key {
		delete(s.byHash, h)
		s.unindex(cur)
		return
	}
	if o := s.collided[key]; o != nil {
		delete(s.collided, key)
		s.unindex(o)
	}
}

// unindex drops o, if not nil, from the index of deleting objects.
func (s *objectStore) unindex(o *object) {
	if o == nil || !o.deleting() || o.externalName() == "" {
		return
	}
	ext := o.externalName()
	es := s.deleting[ext]
	for i, e := range es {
		if e == o {
			es = append(es[:i:i], es[i+1:]...)
			break
		}
	}
	if len(es) == 0 {
		delete(s.deleting, ext)
	} else {
		s.deleting[ext] = es
	}
}

func asObject(obj any) (*object, error) {
	o, ok := obj.(*object)
	if !ok {
		return nil, fmt.Errorf("claimguard's store holds its cached objects only, not %T", obj)
	}
	return o, nil
}

func (s *objectStore) Add(obj any) error {
	o, err := asObject(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(o)
	s.rv = o.resourceVersion()
	return nil
}

func (s *objectStore) Update(obj any) error { return s.Add(obj) }

func (s *objectStore) Delete(obj any) error {
	key, err := keyOf(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(key)
	if o, ok := obj.(*object); ok {
		s.rv = o.resourceVersion()
	}
	return nil
}

func (s *objectStore) List() []any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]any, 0, len(s.byHash)+len(s.collided))
	for _, o := range s.byHash {
		out = append(out, o)
	}
	for _, o := range s.collided {
		out = append(out, o)
	}
	return out
}

func (s *objectStore) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.byHash)+len(s.collided))
	for _, o := range s.byHash {
		out = append(out, o.key())
	}
	for key := range s.collided {
		out = append(out, key)
	}
	return out
}

// Len is how many objects the store holds.
func (s *objectStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byHash) + len(s.collided)
}

func (s *objectStore) Get(obj any) (any, bool, error) {
	key, err := keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

func (s *objectStore) GetByKey(key string) (any, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.get(key); o != nil {
		return o, true, nil
	}
	return nil, false, nil
}

func (s *objectStore) Replace(list []any, rv string) error {
	objs := make([]*object, 0, len(list))
	for _, item := range list {
		o, err := asObject(item)
		if err != nil {
			return err
		}
		objs = append(objs, o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byHash, s.collided, s.deleting, s.rv = make(map[uint64]*object, len(objs)), nil, map[string][]*object{}, rv
	for _, o := range objs {
		s.put(o)
	}
	return nil
}

func (s *objectStore) Resync() error { return nil }

func (s *objectStore) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv = rv
}

func (s *objectStore) LastStoreSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

var errNoSuchIndex = errors.New("claimguard's store has the index " + indexExternalName + " only")

func (s *objectStore) Index(indexName string, obj any) ([]any, error) {
	if indexName != indexExternalName {
		return nil, errNoSuchIndex
	}
	o, err := asObject(obj)
	if err != nil || !o.deleting() {
		return nil, err
	}
	return s.ByIndex(indexName, o.externalName())
}

func (s *objectStore) IndexKeys(indexName, value string) ([]string, error) {
	items, err := s.ByIndex(indexName, value)
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, item.(*object).key())
	}
	return out, err
}

func (s *objectStore) ListIndexFuncValues(indexName string) []string {
	if indexName != indexExternalName {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.deleting))
	for ext := range s.deleting {
		out = append(out, ext)
	}
	return out
}

func (s *objectStore) ByIndex(indexName, value string) ([]any, error) {
	if indexName != indexExternalName {
		return nil, errNoSuchIndex
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	es := s.deleting[value]
	out := make([]any, len(es))
	for i, o := range es {
		out[i] = o
	}
	return out, nil
}

func (s *objectStore) GetIndexers() cache.Indexers {
	return cache.Indexers{indexExternalName: byTerminatingExternalName}
}

func (s *objectStore) AddIndexers(cache.Indexers) error {
	return errors.New("claimguard's store takes no further indexes")
}
