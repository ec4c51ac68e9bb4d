package main

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/config"
	"github.com/cdse-jetstream/receiver/internal/embedded"
	"github.com/cdse-jetstream/receiver/internal/natsconn"
	"github.com/cdse-jetstream/receiver/internal/topology"
)

// commandConfig reads the receiver's settings for a one-shot command (the
// environment and the --config file; the server's flags are the server's)
// and validates what the command uses: a usage error (exit 2) names every
// problem, as the server's start would.
func commandConfig(file string, getenv func(string) string, validate ...func(config.Config) error) (config.Config, error) {
	cfg, err := config.Load(config.Sources{File: file, Getenv: getenv})
	if err != nil {
		return cfg, cli.Usagef("invalid configuration:\n%v", err)
	}
	if err := cfg.Check(validate...); err != nil {
		return cfg, cli.Usagef("invalid configuration:\n%v", err)
	}
	return cfg, nil
}

// connect connects a one-shot command with the receiver's NATS settings:
// NATS_URL and its credentials, or, with the embedded server, the running
// receiver's server through the login it left in the data directory. The
// streams and buckets are reached through their owner.
func connect(cfg config.Config, name string) (*nats.Conn, *topology.Topology, error) {
	o := cfg.NATS()
	if cfg.NATSURL == "" {
		var err error
		if o, err = embedded.ReadLogin(cfg.DataDir); err != nil {
			return nil, nil, err
		}
	}
	nc, err := natsconn.ConnectOnce(o, name)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, topology.New(js, cfg.Topology()), nil
}

// ctxDone reports a cancelled run as such rather than as the error of
// whatever call it interrupted.
func ctxDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return err
}
