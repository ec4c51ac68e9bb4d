package event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
)

func TestDecodeComplete(t *testing.T) {
	c, err := event.DecodeCompleteData([]byte(`{"interest":"l2a-alps","event":"created","from":"2026-11-01T00:00:00Z","until":"2026-11-02T00:10:00Z"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	if c.Interest != "l2a-alps" || c.Event != event.Created || !c.Covers(midnight) || c.Covers(midnight.Add(time.Hour)) || c.Covers(midnight.AddDate(0, 0, -2)) {
		t.Errorf("%+v", c)
	}
	if got := event.CompleteSubject(c.Interest, c.Event); got != "cdse.complete.l2a-alps.created" {
		t.Errorf("subject %s", got)
	}
	if got := event.CompleteSubjectIn("staging.complete", event.CompleteProducts, event.Deleted); got != "staging.complete._products.deleted" {
		t.Errorf("subject under a receiver's own prefix %s", got)
	}
	for _, bad := range []string{`{}`, `[]`, `{"interest":"a.b","event":"created","from":"2026-11-01T00:00:00Z","until":"2026-11-02T00:00:00Z"}`,
		`{"interest":"a","event":"made","from":"2026-11-01T00:00:00Z","until":"2026-11-02T00:00:00Z"}`,
		`{"interest":"a","event":"created","from":"2026-11-03T00:00:00Z","until":"2026-11-02T00:00:00Z"}`} {
		if _, err := event.DecodeCompleteData([]byte(bad), nil); !errors.Is(err, event.ErrNotComplete) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
