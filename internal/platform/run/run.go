// Package run is the one start-up shape of the project's servers (the
// receiver's and the fetcher's serve), so that both start, fail and stop
// alike: the settings loaded and checked, every problem at once (a usage
// error: exit 2); the process's prologue (the variables nothing reads
// warned of, the Go memory limit); the server built, a failure logged as a
// failed start; then run until its context ends (a signal) or it fails,
// its shutdown bounded. Each binary gives its parts; the order and the
// shared log lines are here once.
package run

import (
	"context"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/platform/proclimit"
	"github.com/cdse-jetstream/receiver/internal/platform/settings"
)

// Settings loads the settings and validates them: any problem, of either,
// is a usage error naming every problem at once, followed by hints (the
// variables that look like typos of ours), computed only then.
func Settings[C any](load func() (C, error), validate func(C) error, hints func() string) (C, error) {
	cfg, err := load()
	if err == nil {
		err = validate(cfg)
	}
	if err != nil {
		return cfg, cli.Usagef("invalid configuration:\n%v%s", err, hints())
	}
	return cfg, nil
}

// Options are a server's parts of the shape.
type Options struct {
	// Name is the binary's, in "<Name> failed to start".
	Name string
	Log  logrus.FieldLogger
	// Unknown are the environment's variables under our prefixes that
	// nothing reads: a misspelt variable cannot be refused, as a misspelt
	// YAML key is (another binary of ours may read the same environment
	// file), so each is warned about, naming what it resembles.
	Unknown []settings.Unknown
	// MemoryLimit is where the container's memory limit is read
	// (memlimit.FromCgroup when nil).
	MemoryLimit memlimit.Provider
}

// Serve is the shape after the settings: the prologue, then build, then
// the server's run until ctx ends or it fails (it logs its own end and
// bounds its own shutdown, with Bounded). A build error is logged as a
// failed start and returned.
func Serve(ctx context.Context, o Options, build func() (func(context.Context) error, error)) error {
	for _, u := range o.Unknown {
		l := o.Log.WithField("variable", u.Name)
		if u.Suggest != "" {
			l = l.WithField("did_you_mean", u.Suggest)
		}
		l.Warn("environment variable under our prefixes that none of our binaries reads: ignored")
	}
	provider := o.MemoryLimit
	if provider == nil {
		provider = memlimit.FromCgroup
	}
	if soft := proclimit.SetMemoryLimit(provider); soft > 0 {
		o.Log.WithField("gomemlimit_mib", soft>>20).Info("Go memory limit set to 90 % of the container's memory limit")
	}
	serve, err := build()
	if err != nil {
		o.Log.WithError(err).Error(o.Name + " failed to start")
		return err
	}
	return serve(ctx)
}

// Bounded runs a shutdown within d, whether or not ctx has ended (it
// usually has: the signal that asks for the shutdown ends it).
func Bounded(ctx context.Context, d time.Duration, shutdown func(context.Context) error) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	return shutdown(sctx)
}
