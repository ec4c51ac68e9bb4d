package fetcher

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/s3"
)

// Scheme is one kind of target, by the scheme of FETCH_TARGET's URL.
type Scheme struct {
	// Example is the URL's form, for messages.
	Example string
	// Check says what is wrong with the URL without touching the
	// target (a start's settings check, every problem at once).
	Check func(u *url.URL) error
	// Open builds the target (getenv reads settings of its own, such as
	// AWS_*).
	Open func(ctx context.Context, u *url.URL, cfg fetchconfig.Config, getenv func(string) string) (target.Target, error)
}

// Schemes are the targets the fetcher stores into: adding one is its
// package (internal/fetcher/target/<name>, meeting target.Target) and
// one line here.
var Schemes = map[string]Scheme{
	"file": {"file:///dir", fileCheck, func(_ context.Context, u *url.URL, cfg fetchconfig.Config, _ func(string) string) (target.Target, error) {
		dir, err := fileDir(u)
		if err != nil {
			return nil, err
		}
		return file.New(dir, cfg.DiskReserve)
	}},
	"s3": {"s3://bucket/prefix", s3Check, func(ctx context.Context, u *url.URL, cfg fetchconfig.Config, getenv func(string) string) (target.Target, error) {
		o, err := s3.OptionsFromEnv(getenv)
		if err != nil {
			return nil, fmt.Errorf("S3 settings: %w", err)
		}
		o.PathStyle, o.PartSize, o.Concurrency = cfg.S3PathStyleOption(), cfg.S3PartSize, cfg.S3Concurrency
		return s3.New(ctx, u.Host, strings.Trim(u.Path, "/"), o)
	}},
}

// schemeOf parses FETCH_TARGET and finds its scheme.
func schemeOf(raw string) (*url.URL, Scheme, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Scheme{}, fmt.Errorf("FETCH_TARGET %q: %w", raw, err)
	}
	s, ok := Schemes[u.Scheme]
	if !ok {
		var forms []string
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range Schemes {
				if !yield(k) {
					return
				}
			}
		}) {
			forms = append(forms, Schemes[name].Example)
		}
		return nil, Scheme{}, fmt.Errorf("FETCH_TARGET %q: want %s", raw, strings.Join(forms, " or "))
	}
	if err := s.Check(u); err != nil {
		return nil, Scheme{}, fmt.Errorf("FETCH_TARGET %q: %w", raw, err)
	}
	return u, s, nil
}

// CheckTarget says what is wrong with FETCH_TARGET, nil when nothing; an
// empty one is fetchconfig's to report (required).
func CheckTarget(raw string) error {
	if raw == "" {
		return nil
	}
	_, _, err := schemeOf(raw)
	return err
}

// OpenTarget builds the target of cfg.Target.
func OpenTarget(ctx context.Context, cfg fetchconfig.Config, getenv func(string) string) (target.Target, error) {
	u, s, err := schemeOf(cfg.Target)
	if err != nil {
		return nil, err
	}
	t, err := s.Open(ctx, u, cfg, getenv)
	if err != nil {
		return nil, fmt.Errorf("FETCH_TARGET: %w", err)
	}
	return t, nil
}

func fileCheck(u *url.URL) error {
	_, err := fileDir(u)
	return err
}

// fileDir is the directory of a file URL: file:///dir, or file://./dir
// under the working directory (the development settings), made absolute
// once for the URLs of the fetched events.
func fileDir(u *url.URL) (string, error) {
	if u.Path == "" {
		return "", fmt.Errorf("no directory")
	}
	switch u.Host {
	case "", "localhost":
		return u.Path, nil
	case ".":
		return filepath.Abs("." + u.Path)
	default:
		return "", fmt.Errorf("a file URL names a local directory (file:///dir, or file://./dir under the working directory)")
	}
}

func s3Check(u *url.URL) error {
	if u.Host == "" {
		return fmt.Errorf("no bucket")
	}
	return nil
}
