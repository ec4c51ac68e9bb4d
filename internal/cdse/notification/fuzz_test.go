package notification

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// The seed corpora run with every `go test`; fuzz longer with e.g.
//
//	go test ./internal/cdse/notification -run '^$' -fuzz FuzzParse -fuzztime 5m

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures.Dir(), "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "null", "[]", "[1]", `{"SubscriptionEvent":"created","ProductId":"0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f","value":{"Name":"S2A","Attributes":[{"Name":"platformShortName","Value":"a.b>"}]}}`, `{"a":"\u0000","b":{"c":["}"]}}`, strings.Repeat("[", 50)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ns, err := Parse(body, 10)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("error message too long (%d bytes)", len(err.Error()))
			}
			return
		}
		if len(ns) == 0 || len(ns) > 10 {
			t.Fatalf("accepted %d notifications", len(ns))
		}
		for _, n := range ns {
			checkNotification(t, n)
		}
	})
}

func checkNotification(t *testing.T, n Notification) {
	t.Helper()
	switch n.Event {
	case event.Created, event.Modified, event.Deleted:
	default:
		t.Fatalf("accepted event %q", n.Event)
	}
	if len(n.ProductID) != 36 || strings.ToLower(n.ProductID) != n.ProductID {
		t.Fatalf("ProductID %q not canonical", n.ProductID)
	}
	if !json.Valid(n.Raw) || !utf8.Valid(n.Raw) {
		t.Fatalf("Raw is not valid JSON: %q", n.Raw)
	}
	checkSubject(t, n.Subject("cdse.product"))
	// What becomes a message header as it is (internal/ingest builds the
	// headers; its FuzzHeaders checks them whole).
	for k, v := range map[string]string{"ProductName": n.ProductName, "SubscriptionID": n.SubscriptionID,
		"Collection": n.Collection, "ProductType": n.ProductType, "PublicationDate": n.PublicationDate,
		"ContentLength": n.ContentLength, "S3Path": n.S3Path, "Online": n.Online} {
		if strings.ContainsAny(v, "\r\n\x00") {
			t.Fatalf("%s, a header value, is unsafe: %q", k, v)
		}
	}
}

func checkSubject(t *testing.T, subject string) {
	t.Helper()
	tokens := strings.Split(subject, ".")
	if len(tokens) != 5 {
		t.Fatalf("subject %q has %d tokens", subject, len(tokens))
	}
	for _, tok := range tokens {
		if tok == "" || strings.Trim(tok, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			t.Fatalf("subject %q has an unsafe token %q", subject, tok)
		}
	}
}

func FuzzSubject(f *testing.F) {
	for _, s := range []string{"SENTINEL-2", "SENTINEL-2.>", "*", " a b ", "ü", "", "S5P_OFFL"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, platform, name string) {
		n := Notification{Event: event.Created, Collection: collectionOf(platform, name), ProductType: event.SanitizeToken(name)}
		checkSubject(t, n.Subject("cdse.product"))
	})
}

func FuzzDedupeKey(f *testing.F) {
	f.Add("2026-11-22T08:01:02.654321Z", "2026-11-22T09:01:02.654321+01:00")
	f.Add("2026-11-22T08:01:02Z", "2026-11-22T08:01:02.000Z")
	f.Add("", "2026-11-22T08:01:02")
	f.Fuzz(func(t *testing.T, a, b string) {
		const pid = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
		ta, oka := ParseTime(a)
		tb, okb := ParseTime(b)
		ka := DedupeKey(event.Modified, pid, ta)
		kb := DedupeKey(event.Modified, pid, tb)
		if strings.ContainsAny(ka, "\r\n ") {
			t.Fatalf("key %q holds whitespace", ka)
		}
		// Two spellings of one instant must give one key, two instants two keys.
		if oka && okb && ta.Equal(tb) != (ka == kb) {
			t.Fatalf("%q and %q: equal instants %v, equal keys %v", a, b, ta.Equal(tb), ka == kb)
		}
		if oka && !ta.IsZero() && !strings.HasSuffix(ka, ta.UTC().Format(time.RFC3339Nano)) {
			t.Fatalf("key %q lacks the modification date", ka)
		}
	})
}

// FuzzValidJSON holds the fast validator to encoding/json's verdict.
func FuzzValidJSON(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures.Dir(), "*.json"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	for _, s := range []string{``, ` `, `0`, `-0.5e+10`, `01`, `1.`, `.1`, `-`, `1e`, `"\u00e9"`, `"\u00g0"`, `"\x"`, "\"\x01\"", `[1,]`, `{"a":1,}`, `{"a" 1}`, `[]]`, `nul`, `truex`, `{"a":[{"b":null}]}`, `"\ud800"`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, _ := checkJSON(b); got != json.Valid(b) {
			t.Fatalf("checkJSON(%q) = %v, encoding/json says %v", b, got, !got)
		}
	})
}

// FuzzDuplicateNames holds the validator's check of repeated member names
// to jsontext (the code becoming the standard library's
// encoding/json/jsontext), which refuses exact duplicates at every depth:
// a duplicate jsontext finds, we find; a body we accept without one,
// jsontext accepts. We refuse case variants too, which jsontext allows, so
// the converse is not asked. jsontext was weighed as the parser itself and
// not taken for that reason (bench/RESULTS.md); it stays the reference here.
func FuzzDuplicateNames(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures.Dir(), "*.json"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"x":1},{"x":2,"x":3}]`, `{"a":1,"A":2}`, `{"a\u0062":1,"ab":2}`,
		`{"Name":"S2A","name":"S1B"}`, `{"k":{"K":{"\u212a":1}}}`, `{"a":[{"b":[{"c":1,"c":1}]}]}`, `{"":1,"":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		ok, dup := checkJSON(b)
		d := jsontext.NewDecoder(bytes.NewReader(b))
		_, err := d.ReadValue()
		if err == nil {
			if _, terr := d.ReadToken(); !errors.Is(terr, io.EOF) {
				err = terr // more than one value
			}
		}
		switch {
		case errors.Is(err, jsontext.ErrDuplicateName) && ok && dup < 0:
			t.Fatalf("jsontext finds a duplicate name in %q, the validator does not", b)
		case ok && dup < 0 && err != nil:
			t.Fatalf("the validator accepts %q, jsontext refuses it: %v", b, err)
		}
	})
}
