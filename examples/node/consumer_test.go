package node

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// install runs npm ci when node_modules is missing or older than the
// lockfile (make test does it before the tests; go test alone needs it here).
func install(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the Node.js consumer cannot run (this project's machines have it)", tool)
		}
	}
	lock, err := os.Stat("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if mods, err := os.Stat(filepath.Join("node_modules", ".package-lock.json")); err == nil && !mods.ModTime().Before(lock.ModTime()) {
		return
	}
	out, err := exec.Command("npm", "ci", "--no-audit", "--no-fund").CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
}

// consume runs consumer.mjs until it has printed count lines.
func consume(t *testing.T, env ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "consumer.mjs")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node consumer.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

func TestNodeConsumer(t *testing.T) {
	install(t)
	r := receivertest.Start(t, nil)
	all := r.PostFixtures(t)
	env := []string{"NATS_URL=" + r.NATSURL, "PRODUCT_TYPE=S2MSI2A", "COUNT=1"}

	// Of every fixture, the one created S2MSI2A product.
	const id = "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"
	name := "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"
	want := "created " + name + " /eodata/Sentinel-2/MSI/L2A/2026/11/21/" + name +
		" https://catalogue.dataspace.copernicus.eu/odata/v1/Products(" + id + ")/$value"
	if got := consume(t, env...); len(got) != 1 || got[0] != want {
		t.Fatalf("consumer printed\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}

	// It acknowledged it: the durable consumer has nothing pending.
	js, closeNC := natstest.JetStream(t, r.NATSURL)
	defer closeNC()
	ctx := context.Background()
	c, err := js.Consumer(ctx, "CDSE_PRODUCTS", "downloader-S2MSI2A")
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.AckFloor.Consumer != 1 || info.NumAckPending != 0 || info.NumPending != 0 || info.Config.FilterSubject != "cdse.product.created.*.S2MSI2A" || info.Config.AckPolicy != jetstream.AckExplicitPolicy {
		t.Fatalf("durable consumer after one message: ack floor %d, ack pending %d, pending %d, filter %q, ack policy %v",
			info.AckFloor.Consumer, info.NumAckPending, info.NumPending, info.Config.FilterSubject, info.Config.AckPolicy)
	}

	// A new product arrives; the restarted consumer resumes after the
	// acknowledged one and prints only the new product.
	body := all["created-s2.json"]
	const id2 = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	name2 := strings.Replace(name, "T32TQM", "T32TQN", 1)
	body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte(id), []byte(id2)), []byte(strings.TrimSuffix(name, ".SAFE")), []byte(strings.TrimSuffix(name2, ".SAFE")))
	if code, answer := r.Post(t, body); code != 200 || !strings.Contains(answer, `"accepted":1`) {
		t.Fatalf("new product: %d %s", code, answer)
	}
	want2 := "created " + name2 + " /eodata/Sentinel-2/MSI/L2A/2026/11/21/" + name2 +
		" https://catalogue.dataspace.copernicus.eu/odata/v1/Products(" + id2 + ")/$value"
	if got := consume(t, env...); len(got) != 1 || got[0] != want2 {
		t.Fatalf("restarted consumer printed\n%s\nwant\n%s", strings.Join(got, "\n"), want2)
	}
}

// TestNodeConsumerOfAnInterest: with INTEREST, the consumer reads the
// copies the receiver routed to that named interest, and only those.
func TestNodeConsumerOfAnInterest(t *testing.T) {
	install(t)
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte("interests:\n  - name: s1-grd\n    filter: Collection/Name eq 'SENTINEL-1'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := receivertest.Start(t, func(c *config.Config) { c.InterestsFile = file })
	r.PostFixtures(t)
	got := consume(t, "NATS_URL="+r.NATSURL, "INTEREST=s1-grd", "COUNT=2")
	if len(got) != 2 || !strings.HasPrefix(got[0], "s1-grd created S1") || !strings.HasPrefix(got[1], "s1-grd created S1") {
		t.Fatalf("consumer of the interest printed\n%s", strings.Join(got, "\n"))
	}
}
