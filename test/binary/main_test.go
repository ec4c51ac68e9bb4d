package binary_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

const (
	user     = "cdse"
	password = "binary-test-password-1"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

// receiverBin is the real binary, built as make build builds it: the
// version, commit and date set with -X, which --version and
// cdse_receiver_build_info must show.
func receiverBin(t testing.TB) string {
	t.Helper()
	return bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/receiver", "-ldflags", "-X github.com/prometheus/common/version.Version="+testVersion+
		" -X github.com/prometheus/common/version.Revision=0123abc -X github.com/prometheus/common/version.BuildDate=2026-01-02T03:04:05Z")
}

const testVersion = "v0.0.0-test"

func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := receiverBin(t)
	want := "receiver version " + testVersion + " (revision 0123abc, built 2026-01-02T03:04:05Z, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("receiver %v: %v\n%s\nwant %s", args, err, out, want)
		}
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	var v struct{ Version, Revision, BuildDate, GoVersion string }
	if err != nil || json.Unmarshal(out, &v) != nil || v.Version != testVersion || v.Revision != "0123abc" || v.BuildDate != "2026-01-02T03:04:05Z" || v.GoVersion != runtime.Version() {
		t.Errorf("receiver version -o json: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "version", "extra").CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "See 'receiver version --help'") {
		t.Errorf("receiver version extra: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "completion", "bash").Output(); err != nil || !strings.Contains(string(out), "bash completion") || !strings.Contains(string(out), "receiver") {
		t.Errorf("receiver completion bash: %v %.200s", err, out)
	}
	// Help of a command without any setting or credential.
	if out, err := exec.Command(bin, "backfill", "--help").Output(); err != nil || !strings.Contains(string(out), "--since string") {
		t.Errorf("receiver backfill --help: %v %s", err, out)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

type proc struct {
	cmd     *exec.Cmd
	webhook string
	admin   string
	natsURL string
	logs    *bins.SyncBuffer
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, once done
}

// startReceiver runs the binary with the embedded NATS default on free ports
// and returns once its "receiver started" log line says where it listens
// and /readyz answers 200. extraEnv adds or overrides settings.
func startReceiver(t *testing.T, dataDir string, extraEnv ...string) *proc {
	t.Helper()
	return startReceiverArgs(t, dataDir, nil, extraEnv...)
}

// startReceiverArgs is startReceiver with command-line arguments.
func startReceiverArgs(t *testing.T, dataDir string, args []string, extraEnv ...string) *proc {
	t.Helper()
	bin := receiverBin(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"RECEIVER_USERNAME="+user,
		"RECEIVER_PASSWORD="+password,
		"RECEIVER_ADDR=127.0.0.1:0",
		"RECEIVER_ADMIN_ADDR=127.0.0.1:0",
		"NATS_EMBEDDED_ADDR=127.0.0.1:0",
		"RECEIVER_DATA_DIR="+dataDir,
		"RECEIVER_SHUTDOWN_TIMEOUT=10s",
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &bins.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	started := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.logs.Write(append(sc.Bytes(), '\n'))
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "receiver started" {
				started <- line
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case line := <-started:
		p.webhook, p.admin, p.natsURL = line["webhook_addr"].(string), line["admin_addr"].(string), line["nats_url"].(string)
	case <-p.done:
		t.Fatalf("receiver exited before it started (%v); logs:\n%s", p.err, p.logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("receiver did not start; logs:\n%s", p.logs.String())
	}
	if err := scrape.Status("http://"+p.admin+"/readyz", http.StatusOK, 15*time.Second); err != nil {
		t.Fatalf("%v; logs:\n%s", err, p.logs.String())
	}
	return p
}

// post sends body to the webhook with the receiver's credentials.
func (p *proc) post(t *testing.T, body []byte) (int, string) {
	t.Helper()
	return p.postAs(t, user, password, body)
}

// postAs sends body to the webhook with the given Basic credentials.
func (p *proc) postAs(t *testing.T, user, pass string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.webhook+"/notifications", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("exit after SIGTERM: %v; logs:\n%s", p.err, p.logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within 15s of SIGTERM")
	}
}

func TestBinaryEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir)

	// A downstream consumer, as a user would write one, on the embedded server.
	js, closeNC := natstest.JetStream(t, p.natsURL)
	defer closeNC()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, "CDSE_PRODUCTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"cdse.product.>"}})
	if err != nil {
		t.Fatal(err)
	}

	files := []string{"created-s1.json", "created-s2.json", "created-s3.json", "created-s5p.json", "modified-s2.json", "deleted-s1.json", "created-s2.json"}
	for _, f := range files {
		if code, resp := p.post(t, fixtures.Notification(t, f)); code != 200 {
			t.Fatalf("%s: %d %s", f, code, resp)
		}
	}
	want := []string{
		"cdse.product.created.SENTINEL-1.IW_GRDH_1S-COG",
		"cdse.product.created.SENTINEL-2.S2MSI2A",
		"cdse.product.created.SENTINEL-3.OL_1_EFR___",
		"cdse.product.created.SENTINEL-5P.L2__NO2___",
		"cdse.product.modified.SENTINEL-2.S2MSI2A",
		"cdse.product.deleted.SENTINEL-1.IW_GRDH_1S-COG",
	}
	batch, err := cons.Fetch(len(want)+1, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, m.Subject())
		h := m.Headers()
		if h.Get("Cdse-Source") != "push" || h.Get("Nats-Msg-Id") == "" {
			t.Errorf("headers of %s: %v", m.Subject(), h)
		}
		// CloudEvents (binary content mode of the NATS binding), on by default.
		event := strings.Split(m.Subject(), ".")[2]
		for k, ok := range map[string]bool{
			"ce-specversion": h.Get("ce-specversion") == "1.0",
			"ce-id":          h.Get("ce-id") == h.Get("Nats-Msg-Id"),
			"ce-type":        h.Get("ce-type") == "eu.copernicus.dataspace.product."+event,
			"ce-source":      strings.HasPrefix(h.Get("ce-source"), "https://catalogue.dataspace.copernicus.eu/odata/v1/Subscriptions("),
			"ce-time":        h.Get("ce-time") != "",
			"content-type":   h.Get("content-type") == "application/json",
			"download url":   h.Get("Cdse-Download-Url") == "https://catalogue.dataspace.copernicus.eu/odata/v1/Products("+h.Get("Cdse-Product-Id")+")/$value",
			"product type":   h.Get("Cdse-Product-Type") == strings.Split(m.Subject(), ".")[4],
			// Only the product types whose STAC collection is documented.
			"stac url": h.Get("Cdse-Stac-Url") == map[string]string{
				"S2MSI2A": "https://stac.dataspace.copernicus.eu/v1/collections/sentinel-2-l2a/items/" + strings.TrimSuffix(h.Get("Cdse-Product-Name"), ".SAFE"),
			}[h.Get("Cdse-Product-Type")],
		} {
			if !ok {
				t.Errorf("%s of %s: %v", k, m.Subject(), h)
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("consumer got\n%v\nwant\n%v", got, want)
	}

	p.stop(t)
	if strings.Contains(p.logs.String(), password) {
		t.Error("the password appears in the process output")
	}
	// A JSON line per request, all of them written out by the exit.
	var requests int
	for _, line := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"request"`) {
			var l struct {
				Level, Method, Outcome string
				Status                 int
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil || l.Level != "info" || l.Method != "POST" || l.Status == 0 || l.Outcome == "" {
				t.Errorf("request line %q: %+v %v", line, l, err)
			}
			requests++
		}
	}
	if requests < len(want) {
		t.Errorf("%d request lines in the log, want at least %d:\n%s", requests, len(want), p.logs.String())
	}

	// A restart on the same data directory remembers what was delivered.
	p2 := startReceiver(t, dataDir)
	if code, resp := p2.post(t, fixtures.Notification(t, "created-s3.json")); code != 200 || !strings.Contains(resp, `"duplicates":1`) {
		t.Fatalf("after restart: %d %s", code, resp)
	}
	p2.stop(t)
}

func TestBinaryRefusesToStartWithoutCredentials(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := receiverBin(t)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "RECEIVER_DATA_DIR=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2; output %s", err, out)
	}
	for _, want := range []string{"RECEIVER_USERNAME is required", "RECEIVER_PASSWORD or RECEIVER_PASSWORD_FILE is required"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
