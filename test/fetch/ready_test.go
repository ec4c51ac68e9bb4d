package fetch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// TestNotReadyUntilTheBucketExists: a fetcher whose bucket is missing is
// not ready, and /readyz says why (the probe write's NoSuchBucket), where
// a lookup alone passed; the bucket made, it becomes ready by itself.
func TestNotReadyUntilTheBucketExists(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := s3test.Start(t)
	env := store.Env()
	env["FETCH_TARGET"] = "s3://cdse-not-made-yet/products"
	p := w.launchFetcher(t, env)
	readyz := func() (int, map[string]string) {
		resp, err := http.Get("http://" + p.admin + "/readyz")
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r map[string]string
		_ = json.Unmarshal(b, &r)
		return resp.StatusCode, r
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, r := readyz()
		if code == http.StatusServiceUnavailable && strings.Contains(r["target"], "NoSuchBucket") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d %v, want 503 with the target's NoSuchBucket\n%s", code, r, p.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := store.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("cdse-not-made-yet")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _ := readyz(); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after the bucket was made\n%s", p.logs)
		}
	}
}
