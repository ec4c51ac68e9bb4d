package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image make image builds: loaded back from its tarball, it has the
// user, entrypoint and labels, and the binaries in it run (the receiver,
// register, and the fetcher the chart runs from the same image).
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the image is linux/amd64; its binaries run only there")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-trimpath",
		"-ldflags", "-s -w -X github.com/prometheus/common/version.Version=v9.9.9-image -X github.com/prometheus/common/version.Revision=cafe123",
		"-o", bin+string(os.PathSeparator), "./cmd/receiver", "./cmd/register", "./cmd/fetcher")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	created := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	o := Options{BinDir: bin, Version: "v9.9.9-image", Revision: "cafe123", Source: "https://github.com/cdse-jetstream/receiver", Created: created, Tag: "cdse-receiver:v9.9.9-image"}
	if err := Write(path, o); err != nil {
		t.Fatal(err)
	}

	tag, _ := name.NewTag(o.Tag)
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	for what, ok := range map[string]bool{
		"user 65532":   c.User == "65532:65532",
		"entrypoint":   strings.Join(c.Entrypoint, " ") == "/usr/local/bin/receiver",
		"platform":     cf.OS == "linux" && cf.Architecture == "amd64",
		"data dir env": strings.Contains(strings.Join(c.Env, " "), "RECEIVER_DATA_DIR=/data"),
		"ports":        len(c.ExposedPorts) == 4,
		"fetcher port": func() bool { _, ok := c.ExposedPorts["9091/tcp"]; return ok }(),
		"source":       c.Labels["org.opencontainers.image.source"] == "https://github.com/cdse-jetstream/receiver",
		"revision":     c.Labels["org.opencontainers.image.revision"] == "cafe123",
		"version":      c.Labels["org.opencontainers.image.version"] == "v9.9.9-image",
		"created":      cf.Created.Time.Equal(created),
	} {
		if !ok {
			t.Errorf("%s: config %+v, labels %v", what, c, c.Labels)
		}
	}

	// The file system: the binaries, /data owned by the user.
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	extracted := t.TempDir()
	seen := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			f, err := os.OpenFile(filepath.Join(extracted, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	if h := seen["data/"]; h == nil || h.Uid != 65532 {
		t.Errorf("/data: %+v", h)
	}
	for _, b := range []string{"receiver", "register", "fetcher"} {
		if !slices.Contains(Binaries, b) {
			t.Errorf("%s is not among the image's binaries %v", b, Binaries)
		}
	}
	for _, b := range Binaries {
		h := seen["usr/local/bin/"+b]
		if h == nil || h.Mode != 0o755 {
			t.Fatalf("/usr/local/bin/%s: %+v", b, h)
		}
		out, err := exec.Command(filepath.Join(extracted, b), "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), b+" version v9.9.9-image (revision cafe123,") {
			t.Errorf("%s --version from the image: %v %s", b, err, out)
		}
	}

	// Reproducible: the same binaries give the same image.
	path2 := filepath.Join(t.TempDir(), "image.tar")
	if err := Write(path2, o); err != nil {
		t.Fatal(err)
	}
	img2, err := tarball.ImageFromPath(path2, &tag)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same binaries: %s and %s", d1, d2)
	}
}
