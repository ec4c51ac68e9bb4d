package publish

import (
	"hash/maphash"
	"sync"
	"time"
)

// recentIDs remembers the ids of messages JetStream acknowledged, so that a
// retried notification (the catalogue retries, and duplicates are common) is
// answered without a round trip. It is bounded in size (oldest forgotten
// first) and in time; forgetting only costs a round trip, because JetStream's
// own deduplication stays the authority.
//
// Ids are kept as 128-bit hashes (two seeded maphashes), not strings: the
// table then holds no pointers, so the garbage collector does not scan its
// 100 000 entries on every cycle, and it takes a third of the memory. Two
// different ids share a hash with a probability of about n²/2¹²⁹ (1e-29 for
// n = 100 000), with seeds chosen at random per process.
type recentIDs struct {
	mu     sync.Mutex
	ttl    time.Duration
	seeds  [2]maphash.Seed
	at     map[idHash]int64 // unix nanoseconds of the store
	ring   []idHash         // insertion order, for eviction
	filled []bool
	next   int
}

type idHash [2]uint64

func newRecentIDs(size int, ttl time.Duration) *recentIDs {
	return &recentIDs{
		ttl:    ttl,
		seeds:  [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		at:     make(map[idHash]int64, size),
		ring:   make([]idHash, size),
		filled: make([]bool, size),
	}
}

func (r *recentIDs) hash(id string) idHash {
	return idHash{maphash.String(r.seeds[0], id), maphash.String(r.seeds[1], id)}
}

func (r *recentIDs) has(id string, now time.Time) bool {
	h := r.hash(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.at[h]
	return ok && now.UnixNano()-t < int64(r.ttl)
}

// clear forgets every id: the stream they were stored in is gone.
func (r *recentIDs) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.at)
	clear(r.filled)
	r.next = 0
}

// add remembers id as stored at t, where t is no later than the moment
// JetStream stored it, so the entry never outlives the server's window.
func (r *recentIDs) add(id string, t time.Time) {
	h := r.hash(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.at[h]; ok {
		return
	}
	if r.filled[r.next] {
		delete(r.at, r.ring[r.next])
	}
	r.ring[r.next], r.filled[r.next] = h, true
	r.at[h] = t.UnixNano()
	r.next = (r.next + 1) % len(r.ring)
}
