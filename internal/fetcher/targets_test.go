package fetcher

import (
	"context"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
)

// TestOpenTarget: the scheme table builds a directory target from its
// URL, and refuses an unknown scheme, a file URL naming a host, an S3 URL
// without a bucket and a directory that does not exist, each with the
// forms it takes.
func TestOpenTarget(t *testing.T) {
	dir := t.TempDir()
	cfg := fetchconfig.Default()
	cfg.Target = "file://" + dir
	tg, err := OpenTarget(context.Background(), cfg, func(string) string { return "" })
	if err != nil || tg.URL("a/b.zip") != "file://"+dir+"/a/b.zip" {
		t.Fatalf("%v %v", tg, err)
	}
	for _, bad := range []string{"ftp://x/y", "file://host/dir", "s3:///prefix", "file://" + dir + "/missing"} {
		cfg.Target = bad
		if _, err := OpenTarget(context.Background(), cfg, func(string) string { return "" }); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, bad := range []string{"ftp://x/y", "file://host/dir", "s3:///prefix"} {
		if err := CheckTarget(bad); err == nil {
			t.Errorf("CheckTarget(%s) passed", bad)
		}
	}
	if err := CheckTarget("ftp://x/y"); err == nil || err.Error() != `FETCH_TARGET "ftp://x/y": want file:///dir or s3://bucket/prefix` {
		t.Errorf("CheckTarget(ftp://x/y): %v", err)
	}
}
