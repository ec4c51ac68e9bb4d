package docs

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

// TestMakeDemo runs scripts/demo.sh (make demo) on free ports with the
// binaries built here: both interests' subscribers print what was routed
// to them, each product once, the fetcher stores each of them verified,
// and the demo ends by itself with a verified file and where it is.
func TestMakeDemo(t *testing.T) {
	dir := t.TempDir()
	for name, pkg := range map[string]string{"receiver": "cmd/receiver", "register": "cmd/register", "cdse-sim": "cmd/cdse-sim", "subscribe": "examples/subscribe", "fetcher": "cmd/fetcher"} {
		if err := os.Symlink(bins.Build(t, "github.com/cdse-jetstream/receiver/"+pkg), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ports := natstest.FreePorts(t, 5)
	products := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_BIN="+dir, "DEMO_PRODUCTS="+products,
		fmt.Sprintf("DEMO_SIM_ADDR=127.0.0.1:%d", ports[0]), fmt.Sprintf("DEMO_RECEIVER_ADDR=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("DEMO_ADMIN_ADDR=127.0.0.1:%d", ports[2]), fmt.Sprintf("DEMO_NATS_ADDR=127.0.0.1:%d", ports[3]),
		fmt.Sprintf("DEMO_FETCHER_ADMIN_ADDR=127.0.0.1:%d", ports[4]))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	lines := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if m := regexp.MustCompile(`^\[([a-z0-9-]+)\] created (\S+) (\S+)`).FindStringSubmatch(l); m != nil {
			lines[m[1]] = append(lines[m[1]], m[3])
		}
	}
	// Two Sentinel-1 GRD products; of four Sentinel-2, those at most 50 %
	// cloudy (the simulator draws the cloud: none to four).
	if len(lines["s1-grd"]) != 2 || len(lines["s2-clear"]) > 4 || len(lines) > 2 {
		t.Fatalf("the interests' subscribers printed %v\n%s", lines, out)
	}
	for name, ids := range lines {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s printed %s twice (each is sent twice, stored once)", name, id)
			}
			seen[id] = true
		}
	}
	// The fetcher stored every product routed, verified, and the demo
	// ends saying where one is.
	last := strings.Split(strings.TrimSpace(string(out)), "\n")
	file, ok := strings.CutPrefix(last[len(last)-1], "verified file: ")
	if !ok || !strings.HasPrefix(file, products+"/") || !strings.HasSuffix(file, ".zip") {
		t.Errorf("the demo does not end with a verified file under %s:\n%s", products, out)
	} else if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Errorf("the verified file: %v %v", st, err)
	}
	stored := regexp.MustCompile(`== (\d+) products stored in `).FindStringSubmatch(string(out))
	if want := fmt.Sprint(len(lines["s2-clear"]) + len(lines["s1-grd"])); stored == nil || stored[1] != want {
		t.Errorf("products stored %v, want %s (each routed one)\n%s", stored, want, out)
	}
	routed := regexp.MustCompile(`cdse_receiver_interest_routed_total\{interest="s2-clear"\} (\d+)`).FindStringSubmatch(string(out))
	if routed == nil || routed[1] != fmt.Sprint(len(lines["s2-clear"])) {
		t.Errorf("s2-clear: %d printed, the receiver's metric says %v", len(lines["s2-clear"]), routed)
	}
}

// TestMakeDemoBesideAnotherReceiver: with one of its addresses taken (a
// make run left running answers /readyz), the demo fails loudly, naming
// the address, instead of talking to the other receiver and exiting 0.
func TestMakeDemoBesideAnotherReceiver(t *testing.T) {
	dir := t.TempDir()
	for name, pkg := range map[string]string{"receiver": "cmd/receiver", "register": "cmd/register", "cdse-sim": "cmd/cdse-sim", "subscribe": "examples/subscribe", "fetcher": "cmd/fetcher"} {
		if err := os.Symlink(bins.Build(t, "github.com/cdse-jetstream/receiver/"+pkg), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":"ready"}`) }))
	defer other.Close()
	ports := natstest.FreePorts(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_BIN="+dir,
		fmt.Sprintf("DEMO_SIM_ADDR=127.0.0.1:%d", ports[0]), fmt.Sprintf("DEMO_RECEIVER_ADDR=127.0.0.1:%d", ports[1]),
		"DEMO_ADMIN_ADDR="+other.Listener.Addr().String(), fmt.Sprintf("DEMO_NATS_ADDR=127.0.0.1:%d", ports[2]),
		fmt.Sprintf("DEMO_FETCHER_ADMIN_ADDR=127.0.0.1:%d", ports[3]), "DEMO_PRODUCTS="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the demo passed beside another receiver:\n%s", out)
	}
	if !strings.Contains(string(out), "already listens on "+other.Listener.Addr().String()) || !strings.Contains(string(out), "make demo FAILED") {
		t.Errorf("the failure does not name the address:\n%s", out)
	}
}
