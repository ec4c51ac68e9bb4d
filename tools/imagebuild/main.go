// Command imagebuild builds the receiver's container image without a
// container engine (none runs where this project is built and tested):
// the static receiver, register and fetcher binaries on an empty base
// (they carry their CA roots, golang.org/x/crypto/x509roots/fallback; the
// receiver is the entrypoint, the chart's fetcher Deployment sets its
// command to /usr/local/bin/fetcher), user 65532, OCI
// labels, written as an image tarball (the `docker save` layout, OCI
// layers) that `docker load`, `podman load` and `crane push` take. `make image` runs it; it is the release path.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what goes into the image.
type Options struct {
	// BinDir holds the linux binaries of Binaries.
	BinDir                    string
	Version, Revision, Source string
	// Created is the image's creation time (the commit's, for a
	// reproducible image).
	Created time.Time
	Tag     string
}

// User is the image's user: the "nonroot" of distroless, which the chart's
// securityContext also names.
const User = "65532:65532"

// Binaries are installed in /usr/local/bin.
var Binaries = []string{"receiver", "register", "fetcher"}

func main() {
	var o Options
	var out string
	var created int64
	flag.StringVar(&o.BinDir, "bin", "", "directory with the linux binaries receiver, register and fetcher")
	flag.StringVar(&out, "o", "bin/image.tar", "the image tarball to write")
	flag.StringVar(&o.Tag, "tag", "cdse-receiver:dev", "the image's name in the tarball")
	flag.StringVar(&o.Version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&o.Revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	flag.StringVar(&o.Source, "source", "https://github.com/cdse-jetstream/receiver", "org.opencontainers.image.source")
	flag.Int64Var(&created, "created", 0, "creation time, Unix seconds (default: the epoch, for reproducible builds)")
	flag.Parse()
	o.Created = time.Unix(created, 0).UTC()
	if err := Write(out, o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", out)
}

// Write builds the image and writes it as a tarball to path.
func Write(path string, o Options) error {
	img, err := Build(o)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(o.Tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", o.Tag, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return tarball.WriteToFile(path, ref, img)
}

// Build makes the image.
func Build(o Options) (v1.Image, error) {
	layer, err := rootLayer(o)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: o.Created}
	cf.Config.User = User
	cf.Config.Entrypoint = []string{"/usr/local/bin/receiver"}
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/local/bin", "RECEIVER_DATA_DIR=/data"}
	// The receiver's webhook, admin and embedded NATS ports; the fetcher's
	// admin port (FETCH_ADMIN_ADDR).
	cf.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}, "4222/tcp": {}, "9091/tcp": {}}
	cf.Config.Volumes = map[string]struct{}{"/data": {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "cdse-jetstream receiver",
		"org.opencontainers.image.description": "CDSE catalogue subscription notifications into NATS JetStream",
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
	}
	return mutate.ConfigFile(img, cf)
}

// rootLayer is the file system: the binaries, /data for the embedded
// store, /tmp, all with fixed times so the same binaries give the same
// layer.
func rootLayer(o Options) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: o.Created})
	}
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := dir(d, 0o755, 0); err != nil {
			return nil, err
		}
	}
	if err := dir("data/", 0o750, 65532); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: o.Created}); err != nil {
		return nil, err
	}
	for _, b := range Binaries {
		data, err := os.ReadFile(filepath.Join(o.BinDir, b))
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/" + b, Mode: 0o755, Size: int64(len(data)), ModTime: o.Created}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
