package publish

import (
	"sync"
	"time"
)

// recentIDs remembers the ids of messages JetStream acknowledged, so that a
// retried notification (the catalogue retries, and duplicates are common) is
// answered without a round trip. It is bounded in size (oldest forgotten
// first) and in time; forgetting only costs a round trip, because JetStream's
// own deduplication stays the authority.
type recentIDs struct {
	mu   sync.Mutex
	ttl  time.Duration
	at   map[string]time.Time
	ring []string // insertion order, for eviction
	next int
}

func newRecentIDs(size int, ttl time.Duration) *recentIDs {
	return &recentIDs{ttl: ttl, at: make(map[string]time.Time, size), ring: make([]string, size)}
}

func (r *recentIDs) has(id string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.at[id]
	return ok && now.Sub(t) < r.ttl
}

// add remembers id as stored at t, where t is no later than the moment
// JetStream stored it, so the entry never outlives the server's window.
func (r *recentIDs) add(id string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[id]; ok {
		return
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.at, old)
	}
	r.ring[r.next] = id
	r.at[id] = t
	r.next = (r.next + 1) % len(r.ring)
}
