package publish

import (
	"fmt"
	"testing"
	"time"
)

func TestRecentIDs(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRecentIDs(3, time.Minute)
	for i := range 3 {
		r.add(fmt.Sprint("id", i), now)
	}
	for i := range 3 {
		if !r.has(fmt.Sprint("id", i), now.Add(time.Second)) {
			t.Errorf("id%d forgotten", i)
		}
	}
	if r.has("id0", now.Add(time.Minute)) {
		t.Error("remembered past the ttl")
	}
	if r.has("other", now) {
		t.Error("an id never added is known")
	}
	r.add("id3", now) // evicts the oldest
	if r.has("id0", now) || !r.has("id3", now) || !r.has("id1", now) {
		t.Error("eviction is not oldest-first")
	}
	if len(r.at) != 3 {
		t.Errorf("%d entries, bound 3", len(r.at))
	}
}
