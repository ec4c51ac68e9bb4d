package binary_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// Two versions of one Sentinel-2 L1C acquisition, real names
// (internal/cdse/versions/testdata/names.json): processing baseline
// 02.04, then the Collection-1 reprocessing 05.00.
const (
	olderL1C = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
	newerL1C = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
)

// latestFile: one filter, taken twice: every version, and the latest
// only.
const latestFile = `interests:
  - name: l1c-all
    filter: Collection/Name eq 'SENTINEL-2'
  - name: l1c-latest
    versions: latest
    filter: Collection/Name eq 'SENTINEL-2'
`

// TestBinaryLatestInterest (issue 42, "Consumers choose"): two versions
// of one Sentinel-2 acquisition pushed to the real receiver binary in both
// orders. The interest that takes the latest versions only never holds the
// older version when it arrives second (it holds the newer and the notice
// that the older arrived superseded); when the newer arrives second it
// holds both, and the notice between them. The interest beside it that
// takes all versions holds both, in the order they came, as before. What
// each holds is read once the receiver's versions consumer has taken
// every product event in (its copies are stored before its ack).
func TestBinaryLatestInterest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	sim := cdsesim.New(cdsesim.Options{Seed: 42})
	t.Cleanup(sim.Close)
	version := func(name string) *cdsesim.Product {
		sensed, err := time.Parse("20060102T150405", strings.Split(name, "_")[2])
		if err != nil {
			t.Fatal(err)
		}
		return sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) {
			p.Name, p.ContentStart, p.ContentEnd = name, sensed, sensed
			for i, a := range p.Attributes {
				if a.Name == "productType" {
					p.Attributes[i].Value = "S2MSI1C"
				}
			}
		})[0]
	}
	older, newer := version(olderL1C), version(newerL1C)
	tests := []struct {
		name   string
		pushed []*cdsesim.Product
		latest []string
	}{
		{"newer second", []*cdsesim.Product{older, newer}, []string{
			"created " + olderL1C,
			"notice newer_arrived " + olderL1C + " by " + newerL1C,
			"created " + newerL1C,
		}},
		{"older second", []*cdsesim.Product{newer, older}, []string{
			"created " + newerL1C,
			"notice arrived_older " + olderL1C + " by " + newerL1C,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nats := natstest.RunJetStream(t)
			dir := t.TempDir()
			file := filepath.Join(dir, "interests.yaml")
			if err := os.WriteFile(file, []byte(latestFile), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startReceiver(t, dir, "NATS_URL="+nats.ClientURL(), "INTERESTS_FILE="+file)
			for _, prod := range tt.pushed {
				body, err := json.Marshal(map[string]any{
					"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
					"ProductId": prod.ID, "ProductName": prod.Name, "SubscriptionId": uuid.NewString(),
					"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": prod.Entity(),
				})
				if err != nil {
					t.Fatal(err)
				}
				if code, answer := p.post(t, body); code != http.StatusOK {
					t.Fatalf("post %s: %d %s", prod.Name, code, answer)
				}
			}
			js, closeNC := natstest.JetStream(t, nats.ClientURL())
			defer closeNC()
			decided(t, js, len(tt.pushed))
			if got := interestHolds(t, js, "l1c-latest"); !slices.Equal(got, tt.latest) {
				t.Errorf("the latest interest holds\n  %s\nwant\n  %s\nlogs:\n%s", strings.Join(got, "\n  "), strings.Join(tt.latest, "\n  "), p.logs.String())
			}
			all := []string{"created " + tt.pushed[0].Name, "created " + tt.pushed[1].Name}
			if got := interestHolds(t, js, "l1c-all"); !slices.Equal(got, all) {
				t.Errorf("the interest of all versions holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(all, "\n  "))
			}
			p.stop(t)
		})
	}
}

// decided waits until the receiver's versions consumer has acked the n
// product events stored and has none pending.
func decided(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := js.Consumer(context.Background(), event.DefaultStream, topology.VersionsConsumer)
		if err == nil {
			info, err := c.Info(context.Background())
			if err == nil && info.AckFloor.Consumer >= uint64(n) && info.NumPending == 0 && info.NumAckPending == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the versions consumer did not take the %d product events in within 30 s: %v", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interestHolds is what the subjects of the interest name hold, in order:
// "created NAME" for a product event's copy, "notice REASON SUPERSEDED by
// BY" for a notice (event.Decode on it says ErrNotice, as on the notices'
// own subjects).
func interestHolds(t *testing.T, js jetstream.JetStream, name string) []string {
	t.Helper()
	prefix := event.DefaultInterestPrefix + "." + name + "."
	var out []string
	for _, m := range natstest.StreamMessages(t, js, event.DefaultStream) {
		if !strings.HasPrefix(m.Subject, prefix) {
			continue
		}
		if m.Header.Get(event.HeaderInterest) != name {
			t.Errorf("%s: Cdse-Interest %q", m.Subject, m.Header.Get(event.HeaderInterest))
		}
		n, err := event.DecodeData(m.Data, m.Header)
		switch {
		case err == event.ErrNotice:
			s, err := event.DecodeSupersededData(m.Data, m.Header)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, "notice "+string(s.Reason)+" "+s.Superseded.Name+" by "+s.By.Name)
		case err != nil:
			t.Fatalf("%s: %v", m.Subject, err)
		default:
			if n.Acquisition == "" || n.Version == "" {
				t.Errorf("%s: a copy without the product message's Cdse-Acquisition and Cdse-Version: %v", m.Subject, m.Header)
			}
			out = append(out, string(n.Event)+" "+n.ProductName)
		}
	}
	return out
}

// TestBinaryLatestInterestNeedsVersions: with RECEIVER_VERSIONS=false an
// interest that takes the latest versions only is a start-up error naming
// it and its line, not an interest given every version.
func TestBinaryLatestInterestNeedsVersions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "interests.yaml")
	if err := os.WriteFile(file, []byte(latestFile), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := command(t, []string{"RECEIVER_USERNAME=" + user, "RECEIVER_PASSWORD=" + password, "RECEIVER_DATA_DIR=" + dir,
		"RECEIVER_ADDR=127.0.0.1:0", "RECEIVER_ADMIN_ADDR=127.0.0.1:0", "NATS_EMBEDDED_ADDR=127.0.0.1:0",
		"INTERESTS_FILE=" + file, "RECEIVER_VERSIONS=false"})
	if want := `interest "l1c-latest" (line 4): versions: latest needs the versions consumer (RECEIVER_VERSIONS=true)`; code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %s; want a refusal saying %q", code, stderr, want)
	}
}
