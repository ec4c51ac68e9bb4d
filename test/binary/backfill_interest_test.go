package binary_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestBinaryBackfillInterest (issue 32, "a new interest gets its past"):
// the receiver stored the first half of a day's products when it had one
// interest (s1), and the second half after a second one (l2a) was added,
// with its copies, as live ingest stores them. `backfill --interest l2a`
// over the whole day, killed with SIGKILL halfway and started again,
// gives l2a exactly its past: one copy of every product event it takes,
// the second half's copies not a second time, no product message and no
// s1 copy. The stream's duplicate window is 1 s: only the backfill's own
// reading of l2a's subjects keeps it from storing a copy twice. A third
// run stores nothing; a plain backfill afterwards neither.
func TestBinaryBackfillInterest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nats := natstest.RunJetStream(t)
	clock := cdsesim.NewClock(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	var s2 []*cdsesim.Product
	for range 40 {
		s2 = append(s2, sim.Generate(cdsesim.Sentinel2, 50)...)
		sim.Generate(cdsesim.Sentinel1, 10)
		clock.Add(time.Minute)
	}
	// Modified and deleted in the second half: the receiver stored those
	// events, with their l2a copies, after l2a was added.
	for _, p := range s2[100:160] {
		if err := sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range s2[:40] {
		if err := sim.DeleteProduct(p.ID, "Duplicated product"); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	const s1 = "  - name: s1\n    filter: Collection/Name eq 'SENTINEL-1'\n"
	const l2a = "  - name: l2a\n    events: [created, modified, deleted]\n" +
		"    filter: Collection/Name eq 'SENTINEL-2' and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')\n"
	before, after := filepath.Join(dir, "before.yaml"), filepath.Join(dir, "after.yaml")
	if err := os.WriteFile(before, []byte("interests:\n"+s1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(after, []byte("interests:\n"+s1+l2a), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"NATS_URL=" + nats.ClientURL(),
		"CDSE_USERNAME=op@example.org", "CDSE_PASSWORD=account-pw",
		"CDSE_TOKEN_URL=" + srv.URL + cdsesim.TokenPath,
		"CDSE_CATALOGUE_URL=" + srv.URL + "/odata/v1",
		"RECEIVER_DEDUPE_WINDOW=1s",
	}
	js, closeNC := natstest.JetStream(t, nats.ClientURL())
	defer closeNC()
	run := func(file string, args ...string) backfillSummary {
		t.Helper()
		out, errOut, code := command(t, append(env, "INTERESTS_FILE="+file), append(append([]string{"backfill"}, args...), "--rate", "100", "-o", "json")...)
		var sum backfillSummary
		if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil {
			t.Fatalf("backfill %v: exit %d, %v\nstdout %s\nstderr %s", args, code, err, out, errOut)
		}
		return sum
	}
	const day0, half, day1 = "2026-11-01T00:00:00Z", "2026-11-01T06:20:00Z", "2026-11-02T00:00:00Z"
	both := "Collection/Name eq 'SENTINEL-2' or Collection/Name eq 'SENTINEL-1'"
	run(before, "--filter", both, "--since", day0, "--until", half, "--events", "created")
	run(after, "--filter", both, "--since", half, "--until", day1)

	// What the stream holds: the product messages, and each interest's
	// copies by id.
	type held struct {
		products map[string]string // id -> subject
		copies   map[string]map[string]int
		other    []string
	}
	read := func() held {
		h := held{products: map[string]string{}, copies: map[string]map[string]int{}}
		for _, m := range natstest.StreamMessages(t, js, "CDSE_PRODUCTS") {
			id := m.Header.Get("Nats-Msg-Id")
			switch {
			case strings.HasPrefix(m.Subject, "cdse.product."):
				if _, dup := h.products[id]; dup {
					t.Errorf("product message %s stored twice", id)
				}
				h.products[id] = m.Subject
			case strings.HasPrefix(m.Subject, "cdse.interest."):
				name := strings.Split(m.Subject, ".")[2]
				if h.copies[name] == nil {
					h.copies[name] = map[string]int{}
				}
				h.copies[name][id]++
				if m.Header.Get("Cdse-Interest") != name || !strings.HasPrefix(id, "interest/"+name+"/") {
					t.Errorf("copy on %s: Cdse-Interest %q, id %s", m.Subject, m.Header.Get("Cdse-Interest"), id)
				}
			default:
				h.other = append(h.other, m.Subject)
			}
		}
		return h
	}
	// l2a's past: every product event of an L2A product.
	wantL2A := func(h held) map[string]int {
		out := map[string]int{}
		for id, subject := range h.products {
			if strings.HasSuffix(subject, ".SENTINEL-2.S2MSI2A") {
				out["interest/l2a/"+id] = 1
			}
		}
		return out
	}
	start := read()
	stored := len(start.copies["l2a"])
	missing := len(wantL2A(start)) - stored
	if stored == 0 || missing < 300 {
		t.Fatalf("the set-up: l2a holds %d copies, lacks %d", stored, missing)
	}
	total := natstest.StreamCount(t, js, "CDSE_PRODUCTS")
	t.Logf("l2a holds %d copies and lacks %d; s1 holds %d; %d product messages", stored, missing, len(start.copies["s1"]), len(start.products))

	// Usage errors, before anything is read or stored.
	for _, c := range []struct {
		env  []string
		want string
	}{
		{append(env, "INTERESTS_FILE="+after), `--interest "l2b" is not an interest of ` + after + `; its interests: s1, l2a`},
		{env, `--interest "l2b" needs INTERESTS_FILE`},
	} {
		if _, errOut, code := command(t, c.env, "backfill", "--interest", "l2b", "--since", day0); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("an unknown interest: exit %d, stderr %s; want 2 and %q", code, errOut, c.want)
		}
	}

	args := []string{"backfill", "--interest", "l2a", "--since", day0, "--until", day1, "--page-size", "50"}
	dry := run(after, append(args[1:], "--dry-run")...)
	if got := pub(dry, "created") + pub(dry, "modified") + pub(dry, "deleted"); got != missing || dry.Interest != "l2a" {
		t.Fatalf("dry run: would copy %d for %q, want %d for l2a", got, dry.Interest, missing)
	}
	if n := natstest.StreamCount(t, js, "CDSE_PRODUCTS"); n != total {
		t.Fatalf("a dry run stored %d messages", n-total)
	}

	// Killed once a hundred copies are stored.
	cmd := exec.Command(receiverBin(t), append(args, "--rate", "5")...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "INTERESTS_FILE=" + after}, env...)
	killWhenStored(t, cmd, js, total+100)
	if n := int(natstest.StreamCount(t, js, "CDSE_PRODUCTS") - total); n >= missing {
		t.Fatalf("the kill came too late: %d of %d copies stored", n, missing)
	} else {
		t.Logf("killed after %d of %d copies", n, missing)
	}

	check := func(when string) {
		t.Helper()
		h := read()
		if len(h.products) != len(start.products) || len(h.other) != 0 {
			t.Errorf("%s: %d product messages (%d before), other subjects %v", when, len(h.products), len(start.products), h.other)
		}
		if len(h.copies["s1"]) != len(start.copies["s1"]) || len(h.copies) != 2 {
			t.Errorf("%s: s1 holds %d copies (%d before); interests %d", when, len(h.copies["s1"]), len(start.copies["s1"]), len(h.copies))
		}
		want := wantL2A(h)
		for id, n := range h.copies["l2a"] {
			if want[id] != n {
				t.Errorf("%s: l2a holds %s %d times, want %d", when, id, n, want[id])
			}
		}
		for id := range want {
			if h.copies["l2a"][id] == 0 {
				t.Errorf("%s: l2a lacks %s", when, id)
			}
		}
	}
	resumed := run(after, args[1:]...)
	if !resumed.Resumed {
		t.Error("the second run did not resume from the checkpoint")
	}
	check("after the resumed run")
	again := run(after, args[1:]...)
	if again.Resumed || again.Scanned < len(wantL2A(start)) {
		t.Errorf("third run: resumed %v, %d ids read from l2a's subjects", again.Resumed, again.Scanned)
	}
	for _, e := range again.Events {
		if e.Published != 0 {
			t.Errorf("third run copied %d %s events", e.Published, e.Event)
		}
	}
	// A plain backfill of the day stores nothing either: every product
	// message is there, and so is every copy.
	if plain := run(after, "--filter", both, "--since", day0, "--until", day1); pub(plain, "created")+pub(plain, "modified")+pub(plain, "deleted") != 0 {
		t.Errorf("a plain backfill afterwards published %+v", plain.Events)
	}
	check("after a third run and a plain backfill")
}
