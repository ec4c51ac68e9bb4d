package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

func TestS3OptionsFromEnv(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want S3Options
		err  string
	}{
		{"s3 endpoint first", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://other", "AWS_REGION": "eu-central-1"},
			S3Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-central-1"}, ""},
		{"keys from a file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY_FILE": secret},
			S3Options{AccessKeyID: "id", SecretAccessKey: "from-file"}, ""},
		{"both a key and its file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SECRET_ACCESS_KEY_FILE": secret}, S3Options{}, "both"},
		{"half a key", map[string]string{"AWS_ACCESS_KEY_ID": "id"}, S3Options{}, "together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := S3OptionsFromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "from-file") {
					t.Error("the secret in the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != tt.want.Endpoint || got.Region != tt.want.Region || got.AccessKeyID != tt.want.AccessKeyID ||
				got.SecretAccessKey != tt.want.SecretAccessKey || (got.PathStyle == nil) != (tt.want.PathStyle == nil) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	dir := t.TempDir()
	tg, err := ParseTarget(context.Background(), "file://"+dir, TargetOptions{})
	if err != nil || tg.URL("a/b.zip") != "file://"+dir+"/a/b.zip" {
		t.Fatalf("%v %v", tg, err)
	}
	for _, bad := range []string{"ftp://x/y", "file://host/dir", "s3:///prefix", "file://" + dir + "/missing"} {
		if _, err := ParseTarget(context.Background(), bad, TargetOptions{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestSweepPartials(t *testing.T) {
	dir := t.TempDir()
	tg, _ := NewFileTarget(dir, 0)
	ft := tg.(*FileTarget)
	ctx := context.Background()
	old, err := ft.Open(ctx, "a/old.zip", 0, Stored{})
	if err != nil {
		t.Fatal(err)
	}
	old.Write([]byte("some"))
	old.Abort(true)
	past := time.Now().Add(-2 * time.Hour)
	os.Chtimes(ft.part("a/old.zip"), past, past)
	busy, err := ft.Open(ctx, "busy.zip", 0, Stored{})
	if err != nil {
		t.Fatal(err)
	}
	busy.Write([]byte("x"))
	os.Chtimes(ft.part("busy.zip"), past, past)
	// A second Open of a key being written is refused (not permanent).
	if _, err := ft.Open(ctx, "busy.zip", 0, Stored{}); err == nil || Permanent(err) {
		t.Errorf("second open: %v", err)
	}
	n, err := ft.SweepPartials(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("swept %d: %v", n, err)
	}
	if _, err := os.Stat(ft.part("a/old.zip")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old partial: %v", err)
	}
	if _, err := os.Stat(ft.part("busy.zip")); err != nil {
		t.Errorf("the partial in use was swept: %v", err)
	}
	busy.Abort(false)
}

// TestIdleTimeout: a download service that stops sending is cut after
// IdleTimeout and the download resumed.
func TestIdleTimeout(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.product(t, sized(300<<10))
	var stalled atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalled.CompareAndSwap(false, true) {
			w.Header().Set("Content-Length", "307200")
			w.WriteHeader(200)
			w.Write(make([]byte, 1000))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client gave up on it
			return
		}
		http.Redirect(w, r, f.dl+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	o := f.options()
	o.DownloadURL = front.URL + "/odata/v1"
	o.IdleTimeout = 200 * time.Millisecond
	fe := f.fetcher(t, o, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The stalled bytes are not the product's: the resumed download's
	// checksum fails and the second, whole, download succeeds.
	r, err := fe.Fetch(ctx, p, "p.zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutilValue(t, f, "idle"); got != 1 {
		t.Errorf("idle retries %v", got)
	}
	_ = r
}

func testutilValue(t *testing.T, f *fixture, cause string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cdse_fetcher_retries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" && l.GetValue() == cause {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestS3PartSize: the configured part for what fits in 9 000 of them, a
// larger one (whole MiB) for a product that would need more; 10 000 is
// S3's limit of parts.
func TestS3PartSize(t *testing.T) {
	tg := &S3Target{part: 5 << 20}
	for _, tt := range []struct{ size, want int64 }{
		{0, 5 << 20}, {1, 5 << 20}, {9000 * 5 << 20, 5 << 20},
		{9000*5<<20 + 1, 6 << 20}, {100 << 30, 12 << 20},
	} {
		got := tg.partSize(tt.size)
		if got != tt.want || (tt.size > 0 && (tt.size+got-1)/got > 10000) {
			t.Errorf("partSize(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}
