package config

import (
	"github.com/spf13/pflag"

	"github.com/cdse-jetstream/receiver/internal/platform/settings"
)

// Setting is one field of Config as the loader, --help and the docs see it.
type Setting = settings.Setting

// Sources are where Load reads, in rising precedence (the YAML file of
// --config or RECEIVER_CONFIG, the environment, the flags).
type Sources = settings.Sources

// schema is Config's settings, read from its tags once; internal/platform/settings
// applies the rules every binary of ours shares.
var schema = settings.New(Default)

// all are the settings, in the order of Config.
var all = schema.Settings()

// Settings lists every setting, in the order of Config.
func Settings() []Setting { return schema.Settings() }

// Load builds the configuration from, in rising precedence: the defaults,
// the YAML file, the environment and the flags. Every value is taken
// exactly as written; an empty value is no value; a secret is also read
// from <NAME>_FILE; errors name the setting and where it came from, never
// a secret's value, every one at once (internal/platform/settings). Load does not
// validate.
func Load(src Sources) (Config, error) { return schema.Load(src) }

// BindFlags adds a flag to fs for every setting that has one.
func BindFlags(fs *pflag.FlagSet) { schema.BindFlags(fs) }

// ReadSecretFile reads a secret from a file, as every *_FILE and every
// --*-file flag of the project reads it: the content exactly, less its
// trailing newline.
func ReadSecretFile(path string) (string, error) { return settings.ReadSecretFile(path) }
