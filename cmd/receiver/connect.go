package main

import (
	"os"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
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
		return cfg, cli.Usagef("invalid configuration:\n%v%s", err, config.TypoHints(os.Environ()))
	}
	return cfg, nil
}
