package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"

	"golang.org/x/crypto/bcrypt"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// TestCredentialRotationLosesNothing follows the runbook of
// docs/registering.md while the catalogue pushes products without pause:
// the receivers accept the new password beside the old one (a second
// htpasswd line, reloaded), the subscription's password is changed
// (register update --receiver-password-file), the old line removed, and
// the subscription moved to another receiver's endpoint (register update
// --endpoint). Every product is stored exactly once, and no request the
// catalogue sent with its current credentials was answered 401.
func TestCredentialRotationLosesNothing(t *testing.T) {
	w := newSim(t)
	nats := natstest.RunJetStream(t)
	dir := t.TempDir()
	htpasswd := filepath.Join(dir, "htpasswd")
	line := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return "cdse:" + string(h) + "\n"
	}
	const oldPW, newPW = "the-old-webhook-password", "the-new-webhook-password"
	oldLine, newLine := line(oldPW), line(newPW)
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(htpasswd, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(oldLine)
	start := func() *receivertest.Receiver {
		return receivertest.Start(t, func(c *config.Config) {
			c.Username, c.Password, c.HTPasswdFile, c.NATSURL = "", "", htpasswd, nats.ClientURL()
		})
	}
	a, b := start(), start()
	js, closeNC := natstest.JetStream(t, nats.ClientURL())
	defer closeNC()
	w.env["RECEIVER_USERNAME"], w.env["RECEIVER_PASSWORD"] = "cdse", oldPW
	out := w.register(t, "-o", "json", "create", "--endpoint", a.Webhook, "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-2'")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register create: %q %v", out, err)
	}
	id := subs[0].Id

	// The catalogue announces a product every few milliseconds throughout.
	var mu sync.Mutex
	var made []string
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			p := w.sim.Generate(cdsesim.Sentinel2, 1)
			mu.Lock()
			made = append(made, p[0].ID)
			mu.Unlock()
		}
	}()
	// step waits until the catalogue has pushed some more, so that every
	// step of the rotation happens under traffic.
	step := func(name string) {
		t.Helper()
		from := w.sim.Stats().Pushed
		deadline := time.Now().Add(20 * time.Second)
		for w.sim.Stats().Pushed < from+20 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the catalogue stopped pushing (%+v)", name, w.sim.Stats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	step("before")
	write(oldLine + newLine) // 1. both passwords work
	a.App.Reload(false)
	b.App.Reload(false)
	step("both accepted")
	pwFile := filepath.Join(dir, "new-password")
	if err := os.WriteFile(pwFile, []byte(newPW+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.register(t, "update", id, "--receiver-password-file", pwFile) // 2. the catalogue sends the new one
	step("new password sent")
	write(newLine) // 3. the old one goes
	a.App.Reload(false)
	b.App.Reload(false)
	step("old password removed")
	// 4. another endpoint: its preflight sends the password of the
	// operator's environment, the new one by now.
	w.env["RECEIVER_PASSWORD"] = newPW
	w.register(t, "update", id, "--endpoint", b.Webhook, "--insecure-endpoint")
	step("endpoint moved")
	close(stop)
	<-stopped

	mu.Lock()
	n := len(made)
	mu.Unlock()
	if err := natstest.WaitStreamCount(t, js, "CDSE_PRODUCTS", uint64(n), 30*time.Second); err != nil {
		t.Fatalf("%v; catalogue %+v", err, w.sim.Stats())
	}
	ids := natstest.CountBy(natstest.StreamMessages(t, js, "CDSE_PRODUCTS"), "Cdse-Product-Id")
	for _, id := range made {
		if ids[id] != 1 {
			t.Errorf("product %s stored %d times", id, ids[id])
		}
	}
	if st := w.sim.Stats(); st.PushDropped != 0 || st.PushAttempts != st.Pushed {
		t.Errorf("the catalogue's pushes: %+v (every attempt should have been answered 2xx at once)", st)
	}
	for name, r := range map[string]*receivertest.Receiver{"first": a, "second": b} {
		if got := scrape.Value(t, r.Admin, `cdse_receiver_auth_failures_total{reason="invalid"}`); got != "0" {
			t.Errorf("the %s receiver refused %s requests for their credentials", name, got)
		}
	}
	t.Logf("%d products pushed during the rotation, each stored once", n)
}
