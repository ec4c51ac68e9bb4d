package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

// TestSaysWhatItListensOn: subscribe says on stderr what it listens on,
// and warns when nothing on the stream matches (a misspelt interest, a
// collection in the wrong case), naming what does. Before, it waited in
// silence.
func TestSaysWhatItListensOn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/examples/subscribe")
	r := receivertest.Start(t, nil)
	if code, answer := r.Post(t, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("%d %s", code, answer)
	}
	for _, c := range []struct {
		args []string
		want []string // in the first two lines of stderr
	}{
		{[]string{"--collection", "sentinel-2"}, []string{"listening on cdse.product.*.sentinel-2.*", "warning: nothing on the stream matches", "cdse.product.created.SENTINEL-2.S2MSI2A"}},
		{[]string{"--interest", "s1grd"}, []string{"listening on cdse.interest.s1grd.*.*.*", "interests with messages: none yet"}},
		{[]string{"--collection", "SENTINEL-2"}, []string{"listening on cdse.product.*.SENTINEL-2.*"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			got := firstLines(t, bin, r.NATSURL, c.args, len(c.want) > 1)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got)
				}
			}
			if len(c.want) == 1 && strings.Contains(got, "warning") {
				t.Errorf("a warning where messages match:\n%s", got)
			}
		})
	}
}

// firstLines runs subscribe, reads its first stderr line (and a second
// when twoLines), then stops it.
func firstLines(t *testing.T, bin, natsURL string, args []string, twoLines bool) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"NATS_URL=" + natsURL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	want := 1
	if twoLines {
		want = 2
	}
	timeout := time.After(15 * time.Second)
	for len(got) < want {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("subscribe ended: %v", got)
			}
			got = append(got, l)
		case <-timeout:
			t.Fatalf("subscribe said %v within 15 s", got)
		}
	}
	if !twoLines { // no warning follows at once: give it the time the check takes
		select {
		case l, ok := <-lines:
			if ok {
				got = append(got, l)
			}
		case <-time.After(time.Second):
		}
	}
	return strings.Join(got, "\n")
}
