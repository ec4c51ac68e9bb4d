package s3

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/targettest"
)

func TestS3OptionsFromEnv(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want Options
		err  string
	}{
		{"s3 endpoint first", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://other", "AWS_REGION": "eu-central-1"},
			Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-central-1"}, ""},
		{"keys from a file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY_FILE": secret},
			Options{AccessKeyID: "id", SecretAccessKey: "from-file"}, ""},
		{"both a key and its file", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SECRET_ACCESS_KEY_FILE": secret}, Options{}, "both"},
		{"half a key", map[string]string{"AWS_ACCESS_KEY_ID": "id"}, Options{}, "together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OptionsFromEnv(func(k string) string { return tt.env[k] })
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

// TestS3PartSize: the configured part for what fits in 9 000 of them, a
// larger one (whole MiB) for a product that would need more; 10 000 is
// S3's limit of parts.
func TestS3PartSize(t *testing.T) {
	tg := &Target{part: 5 << 20}
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

// TestProbeS3: a missing bucket passes a lookup (a HEAD there is a plain
// 404) but fails the probe write, which names the cause; in the bucket
// the probe leaves nothing behind.
func TestProbeS3(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	missing := s3Target(ctx, t, &s3test.Server{Endpoint: s.Endpoint, AccessKey: s.AccessKey, SecretKey: s.SecretKey, Bucket: "no-such-bucket"}, "p")
	if _, _, err := missing.Stat(ctx, "x.zip"); err != nil {
		t.Logf("a lookup in a missing bucket: %v", err)
	}
	if err := missing.Probe(ctx); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("probe of a missing bucket: %v", err)
	}
	tgt := s3Target(ctx, t, s, "p")
	if err := tgt.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	out, err := tgt.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &s.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("the probe left %d objects", len(out.Contents))
	}
}

// s3Target is the target s3://<the store's bucket>/<prefix> with the
// store's keys, 5 MiB parts, and nothing read from a developer's ~/.aws.
func s3Target(ctx context.Context, t *testing.T, s *s3test.Server, prefix string) *Target {
	t.Helper()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := s.Env()
	so, err := OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	so.PartSize = 5 << 20
	tgt, err := New(ctx, s.Bucket, prefix, so)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func TestContract(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	targettest.Contract(t, s3Target(ctx, t, s, "products"))
}
