package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

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
var errUsage = cli.ErrUsage

// commandSettingsHelp ends the help of every command.
const commandSettingsHelp = `The settings are the receiver's: the environment and, with --config, its
YAML file (NATS_URL and its credentials; with the embedded server, run the
command beside the running receiver, with the same RECEIVER_DATA_DIR, as
with kubectl exec).

Exit codes: 0 ok, 1 error, 2 usage.`

// isCommand says whether args (without the program name) run one of the
// receiver's commands rather than the server.
func isCommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "quarantine", "backfill", "version", "--version", "-v", "completion", "help", "__complete":
		return true
	}
	return false
}

// commands is the tree of the receiver's commands (spf13/cobra, as
// register's): quarantine, backfill, version, completion. The server itself
// keeps its own flag parser, whose one table serves flags, environment and
// YAML file alike.
func commands(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "receiver",
		Short: "CDSE catalogue notifications into NATS JetStream",
		Long:  "receiver [flags] runs the receiver (receiver --help lists its settings); these are its commands.",
	}
	var qo quarantineOptions
	q := &cobra.Command{
		Use:   "quarantine",
		Short: "List, show and replay the refused bodies kept on the quarantine stream",
		Long:  quarantineHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want one of list, show SEQ, replay")
		},
	}
	q.PersistentFlags().StringVar(&qo.config, "config", "", "YAML settings file (as for the receiver); the environment is read too")
	qo.out = cli.AddOutputFlag(q)
	q.PersistentPreRunE = func(*cobra.Command, []string) error { return qo.out.Check() }
	run := func(verb string, seq uint64) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			return quarantineRun(cmd.Context(), qo, verb, seq, getenv, cmd.OutOrStdout())
		}
	}
	show := &cobra.Command{Use: "show SEQ", Short: "Print one body exactly as stored (-o json|yaml: with its metadata)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || seq == 0 {
				return cli.Usagef("SEQ %q is not a sequence number (see quarantine list)", args[0])
			}
			return run("show", seq)(cmd, args)
		}}
	replay := &cobra.Command{Use: "replay", Short: "Validate every body again and publish those that pass, exactly once", Args: cobra.NoArgs, RunE: run("replay", 0)}
	replay.Flags().BoolVar(&qo.dryRun, "dry-run", false, "say what would be published; publish and remove nothing")
	q.AddCommand(
		&cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "List the quarantined bodies", Args: cobra.NoArgs, RunE: run("list", 0)},
		show, replay)

	var bo backfillOptions
	b := &cobra.Command{
		Use:   "backfill --filter FILTER --since TIME",
		Short: "Publish a past range of the catalogue, exactly once",
		Long:  backfillHelp,
		Example: `  receiver backfill --filter "Collection/Name eq 'SENTINEL-2'" --since 2026-11-01T00:00:00Z --until 2026-11-08T00:00:00Z
  receiver backfill --filter "Collection/Name eq 'SENTINEL-1'" --since 2026-11-20T00:00:00Z --events deleted --dry-run -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return backfillRun(cmd.Context(), bo, getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	b.Flags().StringVar(&bo.config, "config", "", "YAML settings file (as for the receiver); the environment is read too")
	bo.flags(b.Flags())
	bo.out = cli.AddOutputFlag(b)
	b.PersistentPreRunE = func(*cobra.Command, []string) error { return bo.out.Check() }
	root.AddCommand(q, b)
	cli.AddVersion(root)
	return root
}

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

// ctxDone reports a cancelled run as such rather than as the error of
// whatever call it interrupted.
func ctxDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return err
}
