package sqlite

import "sync"

// hub delivers release notices to the subscribers of one database within
// this process. Drivers opened on the same file share a hub, so a release
// through one wakes the waiters of all of them at once; other processes
// cannot be reached and find the key free by polling.
type hub struct {
	mu   sync.Mutex
	refs int // drivers using the hub; the registry forgets it at 0
	subs map[string]map[*subscription]struct{}
}

// subscription is one Subscribe call's channel.
type subscription struct {
	ch chan struct{}
}

// hubs maps a database file's resolved path to its hub. Private in-memory
// databases get a hub of their own, outside this map.
var hubs = struct {
	mu sync.Mutex
	m  map[string]*hub
}{m: make(map[string]*hub)}

func newHub() *hub {
	return &hub{refs: 1, subs: make(map[string]map[*subscription]struct{})}
}

// sharedHub returns the hub of the database at path, creating it on first
// use. Every call must be paired with a call to releaseHub.
func sharedHub(path string) *hub {
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	h, ok := hubs.m[path]
	if !ok {
		h = newHub()
		hubs.m[path] = h
		return h
	}
	h.mu.Lock()
	h.refs++
	h.mu.Unlock()
	return h
}

// releaseHub drops one driver's use of the hub at path.
func releaseHub(path string, h *hub) {
	hubs.mu.Lock()
	defer hubs.mu.Unlock()
	h.mu.Lock()
	h.refs--
	last := h.refs == 0
	h.mu.Unlock()
	if last && hubs.m[path] == h {
		delete(hubs.m, path)
	}
}

// subscribe registers a buffered channel for key's notices.
func (h *hub) subscribe(key string) (<-chan struct{}, func()) {
	s := &subscription{ch: make(chan struct{}, 1)}
	h.mu.Lock()
	set := h.subs[key]
	if set == nil {
		set = make(map[*subscription]struct{})
		h.subs[key] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return s.ch, func() { once.Do(func() { h.unsubscribe(key, s) }) }
}

func (h *hub) unsubscribe(key string, s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[key]
	delete(set, s)
	if len(set) == 0 {
		delete(h.subs, key)
	}
}

// notify tells key's subscribers that it may be free. A subscriber whose
// buffer is full already has a notice pending, so dropping this one loses
// nothing.
func (h *hub) notify(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}
