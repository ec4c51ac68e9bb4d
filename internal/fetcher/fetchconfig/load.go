package fetchconfig

import (
	"github.com/spf13/pflag"

	"github.com/cdse-jetstream/receiver/internal/platform/settings"
)

// Setting is one field of Config as the loader, --help and the docs see it.
type Setting = settings.Setting

// Sources are where Load reads, in rising precedence (the YAML file of
// --config or FETCH_CONFIG, the environment, the flags).
type Sources = settings.Sources

// schema is Config's settings; internal/platform/settings applies the rules every
// binary of ours shares (the receiver's internal/receiver/config alike).
// Its flags drop the prefix FETCH_: FETCH_CONSUMER, declared with the
// receiver's, is --consumer here.
var schema = settings.New(Default, settings.Flag("FETCH_CONSUMER", "consumer"))

// settingsList are the settings, in the order of Config.
var settingsList = schema.Settings()

// Settings lists every setting, in the order of Config.
func Settings() []Setting { return schema.Settings() }

// Load builds the configuration from, in rising precedence: the defaults,
// the YAML file, the environment and the flags; values as written, secrets
// also from <NAME>_FILE, every problem at once. Load does not validate.
func Load(src Sources) (Config, error) { return schema.Load(src) }

// BindFlags adds a flag to fs for every setting that has one.
func BindFlags(fs *pflag.FlagSet) { schema.BindFlags(fs) }

// Table is the settings as docs/fetching.md's Markdown table.
func Table() string { return schema.Table() }
