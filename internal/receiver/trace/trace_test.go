package trace_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/receiver/trace"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

const (
	id    = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
	name  = "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"
	other = "11111111-2222-3333-4444-555555555555"
)

type fixture struct {
	js jetstream.JetStream
	o  trace.Options
}

func setup(t *testing.T, fetched bool) fixture {
	t.Helper()
	srv := natstest.RunJetStream(t)
	js, done := natstest.JetStream(t, srv.ClientURL())
	t.Cleanup(done)
	ctx := context.Background()
	streams := []jetstream.StreamConfig{
		{Name: "CDSE_PRODUCTS", Subjects: []string{"cdse.product.>", "cdse.interest.>", "cdse.fetchretry.>"}},
		{Name: "CDSE_QUARANTINE", Subjects: []string{"cdse.quarantine.>"}},
	}
	if fetched {
		streams = append(streams, jetstream.StreamConfig{Name: "CDSE_FETCHED", Subjects: []string{"cdse.fetched.>", "cdse.fetchfailed.>"}})
	}
	for _, c := range streams {
		if _, err := js.CreateStream(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return fixture{js: js, o: trace.Options{ProductStream: "CDSE_PRODUCTS", QuarantineStream: "CDSE_QUARANTINE", FetchedStream: "CDSE_FETCHED", MaxBody: 1 << 20}}
}

func (f fixture) pub(t *testing.T, subject string, data []byte, kv ...string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for i := 0; i+1 < len(kv); i += 2 {
		m.Header.Set(kv[i], kv[i+1])
	}
	if _, err := f.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func productHeaders(pid, pname string, extra ...string) []string {
	return append([]string{"Cdse-Product-Id", pid, "Cdse-Product-Name", pname, "Cdse-Event", "created", "Cdse-Source", "push"}, extra...)
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fill stores, among another product's messages, every kind of message
// about the product; it returns the whats expected, in order.
func (f fixture) fill(t *testing.T) []string {
	body := []byte(`{"ProductId":"` + id + `","value":{"Name":"` + name + `"}}`)
	f.pub(t, "cdse.product.created.SENTINEL-2.S2MSI2A", []byte(`{}`), productHeaders(other, "OTHER.SAFE")...)
	f.pub(t, "cdse.product.created.SENTINEL-2.S2MSI2A", body, productHeaders(id, name)...)
	f.pub(t, "cdse.interest.s2.created.SENTINEL-2.S2MSI2A", body, productHeaders(id, name, "Cdse-Interest", "s2")...)
	f.pub(t, "cdse.interest.s2.created.SENTINEL-2.S2MSI2A", []byte(`{}`), productHeaders(other, "OTHER.SAFE", "Cdse-Interest", "s2")...)
	f.pub(t, "cdse.product.modified.SENTINEL-2.S2MSI2A", body, productHeaders(id, name, "Cdse-Replayed", "7", "Cdse-Source", "pull")...)
	f.pub(t, "cdse.fetchretry.fetcher.SENTINEL-2.S2MSI2A", body, productHeaders(id, name, "Cdse-Fetch-Retry", "3")...)
	// The quarantine: by header; without one (a body from an older
	// version), by the id in it; the second of an array whose header
	// names the first; gzip kept decoded by the receiver's rules; and
	// one of another product, which names ours nowhere.
	f.pub(t, "cdse.quarantine.push", []byte(`{"ProductId":"`+id+`"}`), "Cdse-Product-Id", id, "Cdse-Quarantine-Reason", "invalid_notification", "Cdse-Source", "push")
	f.pub(t, "cdse.quarantine.push", []byte(`{"productid": "x", "Id":"`+strings.ToUpper(id)+`"`), "Cdse-Quarantine-Reason", "invalid_json", "Cdse-Source", "push")
	f.pub(t, "cdse.quarantine.pull", []byte(`[{"ProductId":"`+other+`"},{"ProductId":"`+id+`"}]`), "Cdse-Product-Id", other, "Cdse-Quarantine-Reason", "too_many_notifications", "Cdse-Source", "pull")
	f.pub(t, "cdse.quarantine.push", gz(t, []byte(`{"ProductId":"`+id+`"`)), "Cdse-Body-Encoding", "gzip", "Cdse-Quarantine-Reason", "undecodable_body", "Cdse-Source", "push")
	f.pub(t, "cdse.quarantine.push", []byte(`{"ProductId":"`+other+`","Name":"`+name+`X"}`), "Cdse-Product-Id", other, "Cdse-Quarantine-Reason", "invalid_notification", "Cdse-Source", "push")
	if f.o.FetchedStream != "" {
		f.pub(t, "cdse.fetched.created.SENTINEL-2.S2MSI2A", body, productHeaders(id, name, "Cdse-Object-Url", "file:///data/x")...)
		f.pub(t, "cdse.fetchfailed.SENTINEL-2.S2MSI2A", body, productHeaders(id, name, "Cdse-Fetch-Error", "offline")...)
		f.pub(t, "cdse.fetched.created.SENTINEL-2.S2MSI2A", []byte(`{}`), productHeaders(other, "OTHER.SAFE", "Cdse-Object-Url", "file:///data/y")...)
	}
	return []string{"product", "interest", "product", "fetchretry", "quarantine", "quarantine", "quarantine", "quarantine", "fetched", "failed"}
}

func whats(r trace.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.What)
	}
	return out
}

func TestFindByIDAndByName(t *testing.T) {
	f := setup(t, true)
	want := f.fill(t)
	for _, q := range []string{id, strings.ToUpper(id), "urn:uuid:" + id, name} {
		query, err := trace.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		res, err := trace.Find(context.Background(), f.js, f.o, query)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		// The hits are ordered by time; the stream order is the time order
		// here, so sort them back by stream as published for the check.
		got := whats(res)
		if fmt.Sprint(sortedLike(got, want)) != fmt.Sprint(want) {
			t.Errorf("%s: hits %v, want %v", q, got, want)
		}
		for _, h := range res.Hits {
			switch {
			case h.What == "interest" && h.Interest != "s2":
				t.Errorf("interest copy %+v", h)
			case h.What == "fetchretry" && h.Detail != "retry of failed event 3":
				t.Errorf("retry %+v", h)
			case h.What == "failed" && h.Detail != "offline":
				t.Errorf("failed %+v", h)
			case h.What == "fetched" && h.Detail != "file:///data/x":
				t.Errorf("fetched %+v", h)
			case h.What == "quarantine" && h.Reason == "":
				t.Errorf("quarantine %+v", h)
			case h.What == "product" && h.Source == "pull" && h.Detail != "replayed from quarantine 7":
				t.Errorf("replayed %+v", h)
			}
		}
		if len(res.Reads) != 3 || !res.Reads[0].Done || !res.Reads[1].Done || !res.Reads[2].Done || res.Reads[0].Read != 6 {
			t.Errorf("%s: reads %+v", q, res.Reads)
		}
	}
}

// sortedLike is got in want's order when it holds the same words.
func sortedLike(got, want []string) []string {
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	var out []string
	for _, w := range want {
		if count[w] > 0 {
			count[w]--
			out = append(out, w)
		}
	}
	if len(out) != len(got) {
		return got
	}
	return out
}

// TestQuarantineByIDOfName: a refused body that names the product only
// by its id (in its header) is found by the name, through the id the
// product stream gives the name.
func TestQuarantineByIDOfName(t *testing.T) {
	f := setup(t, false)
	f.pub(t, "cdse.product.created.SENTINEL-2.S2MSI2A", []byte(`{}`), productHeaders(id, name)...)
	f.pub(t, "cdse.quarantine.push", []byte(`not json `+id), "Cdse-Product-Id", id, "Cdse-Quarantine-Reason", "invalid_json")
	res, err := trace.Find(context.Background(), f.js, f.o, trace.Query{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(whats(res)) != "[product quarantine]" {
		t.Errorf("hits %+v", res.Hits)
	}
	// The fetcher's stream does not exist yet: no error, said so.
	if last := res.Reads[len(res.Reads)-1]; res.Reads[1].Stream != "CDSE_FETCHED" || !res.Reads[1].Missing || last.Stream != "CDSE_QUARANTINE" {
		t.Errorf("reads %+v", res.Reads)
	}
}

func TestNotFound(t *testing.T) {
	f := setup(t, true)
	f.fill(t)
	res, err := trace.Find(context.Background(), f.js, f.o, trace.Query{ID: "99999999-2222-3333-4444-555555555555"})
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("%v %+v", err, res.Hits)
	}
	// A name that only begins another's is not it.
	res, err = trace.Find(context.Background(), f.js, f.o, trace.Query{Name: strings.TrimSuffix(name, ".SAFE")})
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("%v %+v", err, res.Hits)
	}
}

// TestLastMessageRemoved: a stream whose last message was removed (a
// quarantined body replayed) is read to its end, not reported incomplete.
func TestLastMessageRemoved(t *testing.T) {
	f := setup(t, false)
	f.pub(t, "cdse.quarantine.push", []byte(`{"ProductId":"`+id+`"}`), "Cdse-Product-Id", id)
	f.pub(t, "cdse.quarantine.push", []byte(`{"ProductId":"`+other+`"}`), "Cdse-Product-Id", other)
	s, err := f.js.Stream(context.Background(), "CDSE_QUARANTINE")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	res, err := trace.Find(context.Background(), f.js, f.o, trace.Query{ID: id})
	if err != nil || fmt.Sprint(whats(res)) != "[quarantine]" {
		t.Fatalf("%v %+v %+v", err, res.Hits, res.Reads)
	}
}

// TestTimeout: a search that runs out of time says it is incomplete, and
// keeps what it found.
func TestTimeout(t *testing.T) {
	f := setup(t, true)
	f.fill(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := trace.Find(ctx, f.js, f.o, trace.Query{ID: id})
	if !errors.Is(err, trace.ErrIncomplete) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := trace.Find(ctx, f.js, f.o, trace.Query{ID: id}); !errors.Is(err, trace.ErrIncomplete) {
		t.Fatalf("err %v", err)
	}
}

func TestParseQuery(t *testing.T) {
	for in, want := range map[string]trace.Query{
		id:                     {ID: id},
		" " + id + "\n":        {ID: id},
		strings.ToUpper(id):    {ID: id},
		"{" + id + "}":         {ID: id},
		name:                   {Name: name},
		"0f6b4c1e-8d2a-4f3b-9": {Name: "0f6b4c1e-8d2a-4f3b-9"},
	} {
		if got, err := trace.ParseQuery(in); err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "  ", "a b", "a\x00b"} {
		if _, err := trace.ParseQuery(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
