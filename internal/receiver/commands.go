package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cli"
	"github.com/cdse-jetstream/receiver/internal/publish"
)

// localLoginFile is where the receiver with the embedded server leaves the
// login of its own connection, for the one-shot commands (receiver
// quarantine, backfill) run beside it — in the same pod, with access to
// the same data directory. It is made anew at every start.
const localLoginFile = "nats-admin.json"

type localLogin struct {
	URL      string `json:"url"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// writeLocalLogin writes the embedded server's URL and the receiver's
// credentials (0600), so that only who can read the data directory — which
// holds the whole stream anyway — can use them.
func writeLocalLogin(dataDir string, emb *publish.Embedded) error {
	b, _ := json.Marshal(localLogin{URL: emb.ClientURL(), User: emb.User, Password: emb.Password})
	path := filepath.Join(dataDir, localLoginFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// connectCommand connects a one-shot command with the receiver's NATS
// settings: NATS_URL and its credentials, or, with the embedded server,
// the running receiver's server through the login it left in the data
// directory.
func connectCommand(cfg Config, name string) (*nats.Conn, jetstream.JetStream, error) {
	o := publish.ConnectOptions{URL: cfg.NATSURL, CredsFile: cfg.NATSCreds, User: cfg.NATSUser, Password: cfg.NATSPassword, Token: cfg.NATSToken, CAFile: cfg.NATSCA}
	if cfg.NATSURL == "" {
		path := filepath.Join(cfg.DataDir, localLoginFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("no NATS_URL, and the embedded server's login %s cannot be read (%w): run this where the receiver runs, with the same RECEIVER_DATA_DIR, while it runs", path, err)
		}
		var l localLogin
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		o = publish.ConnectOptions{URL: l.URL, User: l.User, Password: l.Password}
	}
	nc, err := publish.ConnectOnce(o, name)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// errUsage marks a command line that cannot be run (exit code 2).
var errUsage = errors.New("usage")

// commandConfig reads the receiver's settings for a command: the
// environment and, with --config, the YAML file. Flags of the receiver
// itself are not taken here; the command has its own.
func commandConfig(configFile string, getenv func(string) string) (Config, error) {
	args := []string{"receiver"}
	if configFile != "" {
		args = append(args, "--config", configFile)
	}
	return Load(args, getenv, io.Discard)
}

// newCommandFlags is a FlagSet with the flags every command has: --config
// and -o/--output.
func newCommandFlags(name string, stderr io.Writer, usage string) (*flag.FlagSet, *string, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "YAML settings file (as for the receiver); the environment is read too")
	output := fs.String("output", "table", "table, json or yaml")
	fs.StringVar(output, "o", "table", "table, json or yaml (short for --output)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\nThe NATS settings are the receiver's (NATS_URL and its credentials; with the embedded server, run it beside the running receiver, with the same RECEIVER_DATA_DIR).\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs, config, output
}

// parseInterspersed parses flags wherever they stand among the arguments
// (kubectl's habit: `quarantine show 3 -o json`), returning the rest.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// writeStructured prints v as JSON or YAML (-o json|yaml).
func writeStructured(w io.Writer, format string, v any) error {
	if format == "yaml" {
		return cli.WriteYAML(w, v)
	}
	return writeJSON(w, v)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runCommand runs a command, mapping errors to exit codes: 2 for usage,
// 1 for failures.
func runCommand(stderr io.Writer, name string, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "receiver %s: %v (see receiver %s --help)\n", name, err, name)
		return 2
	}
	fmt.Fprintf(stderr, "receiver %s: %v\n", name, err)
	return 1
}

// ctxDone reports a cancelled run as such rather than as the error of
// whatever call it interrupted.
func ctxDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return err
}
