package interest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

// TestLatestInterestsAreCopiedLater: the ingest path makes no copy for an
// interest that takes the latest versions only, and does not count the
// product unmatched for it; the versions consumer's Copier makes that
// copy from the product message as stored, with the subject, headers and
// Nats-Msg-Id the ingest path gives a copy, and copies a notice under the
// interest's own subjects.
func TestLatestInterestsAreCopiedLater(t *testing.T) {
	file := `interests:
  - name: latest-only
    versions: latest
    filter: Collection/Name eq 'SENTINEL-2'
  - name: all
    filter: Collection/Name eq 'SENTINEL-2'
  - name: s1-latest
    versions: latest
    filter: Collection/Name eq 'SENTINEL-1'
`
	r, path := routerOf(t, file)
	ns, err := notification.Parse(fixtures.Notification(t, "created-s2.json"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The copies under the product subjects: the stream of publishtest
	// takes these only.
	const copies = event.DefaultPrefix + ".copies"
	route := &ingest.Route{Prefix: event.DefaultPrefix, Interests: r, InterestPrefix: copies}
	msgs := ingest.Messages(ns, route, ingest.SourcePush)
	env := publishtest.New(t, nil)
	res, err := env.Publisher.Publish(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	r.Count(msgs, res)
	if len(msgs[0].Copies) != 1 || msgs[0].Copies[0].MsgID != ingest.InterestMsgID("all", msgs[0].MsgID) {
		t.Fatalf("the ingest path's copies: %+v, want the one of all", msgs[0].Copies)
	}
	if got := testutil.ToFloat64(r.unmatched.WithLabelValues("created")); got != 0 {
		t.Errorf("unmatched %v: a product routed to a latest interest is matched", got)
	}
	// Routed to the latest interest only: matched, no copy.
	only := &ingest.Route{Prefix: event.DefaultPrefix, Interests: r, InterestPrefix: copies}
	if err := os.WriteFile(path, []byte(strings.Replace(file, "  - name: all\n    filter: Collection/Name eq 'SENTINEL-2'\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(true); err != nil {
		t.Fatal(err)
	}
	ns2, _ := notification.Parse(fixtures.Notification(t, "created-s2.json"), 1000)
	ns2[0].ProductID, ns2[0].ProductName = "0f6b4c1e-8d2a-4f3b-9c5e-000000000000", "S2B_OTHER.SAFE" // another dedupe key
	msgs2 := ingest.Messages(ns2, only, ingest.SourcePush)
	res2, err := env.Publisher.Publish(context.Background(), msgs2)
	if err != nil {
		t.Fatal(err)
	}
	r.Count(msgs2, res2)
	if len(msgs2[0].Copies) != 0 || testutil.ToFloat64(r.unmatched.WithLabelValues("created")) != 0 {
		t.Errorf("copies %v, unmatched %v: want none and 0", msgs2[0].Copies, testutil.ToFloat64(r.unmatched.WithLabelValues("created")))
	}

	// The Copier, from the product message as the ingest path built it.
	m := msgs[0]
	copier := r.Latest(route)
	stamped := supersede.Product{Subject: m.Subject, Header: m.MessageHeader(), Data: m.Data, N: &ns[0]}
	if got := m.MessageHeader()[event.HeaderLatestInterests]; len(got) != 1 || got[0] != "latest-only" {
		t.Errorf("the product message's %s %q, want [latest-only]", event.HeaderLatestInterests, got)
	}
	if got := msgs2[0].MessageHeader()[event.HeaderLatestInterests]; len(got) != 1 || got[0] != "latest-only" {
		t.Errorf("the product message routed to the latest interest only: %s %q, want [latest-only]", event.HeaderLatestInterests, got)
	}
	if got := copier.Interests(stamped); len(got) != 1 || got[0] != "latest-only" {
		t.Errorf("Interests %v, want [latest-only]", got)
	}
	made, dropped := copier.Copies(stamped)
	if len(made) != 1 || len(dropped) != 0 {
		t.Fatalf("%d copies, want 1", len(made))
	}
	c := made[0]
	wantID := ingest.InterestMsgID("latest-only", m.MsgID)
	if want := copies + ".latest-only" + strings.TrimPrefix(m.Subject, event.DefaultPrefix); c.Subject != want ||
		c.Header.Get(event.HeaderMsgID) != wantID || c.Header.Get(event.HeaderInterest) != "latest-only" || string(c.Data) != string(m.Data) {
		t.Errorf("copy %s %v, want %s with Nats-Msg-Id %s", c.Subject, c.Header, want, wantID)
	}
	if _, ok := c.Header[event.HeaderLatestInterests]; ok {
		t.Errorf("the copy carries %s", event.HeaderLatestInterests)
	}
	for k, v := range m.MessageHeader() {
		if k != event.HeaderMsgID && k != event.HeaderLatestInterests && c.Header.Get(k) != v[0] {
			t.Errorf("copy's %s %q, the product message's %q", k, c.Header.Get(k), v[0])
		}
	}
	stored := &nats.Msg{Subject: "cdse.superseded.SENTINEL-2.S2MSI2A", Data: []byte(`{}`), Header: nats.Header{event.HeaderMsgID: {"superseded:a:b"},
		event.HeaderNotice: {"superseded"}, event.HeaderCollection: {"SENTINEL-2"}, event.HeaderProductType: {"S2MSI2A"}}}
	if _, ok := copier.Notice(stored, "all"); ok {
		t.Error("a notice copied to an interest that takes every version")
	}
	notice, _ := copier.Notice(stored, "latest-only")
	if want := copies + ".latest-only.superseded.SENTINEL-2.S2MSI2A"; notice.Subject != want ||
		notice.Header.Get(event.HeaderMsgID) != ingest.InterestMsgID("latest-only", "superseded:a:b") || !event.IsNotice(notice.Header) {
		t.Errorf("notice copy %s %v, want %s", notice.Subject, notice.Header, want)
	}
}

// TestNoVersionsRefusesALatestInterestOnReload: with the versions consumer
// off, a reloaded file with an interest that takes the latest versions
// only is refused, naming it, and the last good file stays in force.
func TestNoVersionsRefusesALatestInterestOnReload(t *testing.T) {
	r, path := routerOf(t, "interests:\n  - name: a\n    filter: Name eq 'x'\n")
	r.NoVersions()
	if err := os.WriteFile(path, []byte("interests:\n  - name: a\n    filter: Name eq 'x'\n  - name: b\n    versions: latest\n    filter: Name eq 'x'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := r.Reload(false)
	if changed || err == nil || !strings.Contains(err.Error(), `interest "b" (line 4): versions: latest needs the versions consumer`) || r.Current().Len() != 1 {
		t.Errorf("reload: %v %v, %d interests in force", changed, err, r.Current().Len())
	}
}

// routerOf is a Router of a file holding content, and the file's path.
func routerOf(t *testing.T, content string) (*Router, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	r, err := NewRouter(path, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	return r, path
}
