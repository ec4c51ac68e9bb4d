package app

import (
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// BenchmarkDelayObserve is what measuring the delivery delay adds to every
// stored message on the request path: a lookup of the event's observer
// and one histogram observation.
func BenchmarkDelayObserve(b *testing.B) {
	a := &App{delay: newDelay([]string{"push"}), lastStored: newClocks([]string{"push"})}
	s := a.stamp("push")
	msgs := []publish.Message{{Event: "created", Occurred: time.Now().Add(-3 * time.Second)}}
	res := []publish.Result{{Seq: 1}}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		s.observe(msgs, res, now)
	}
}
