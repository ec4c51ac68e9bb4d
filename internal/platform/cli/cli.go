// Package cli is what the project's command-line tools share so that they
// behave as operators expect from kubectl and helm: commands and flags from
// spf13/cobra (flags before or after the command, --help that always works,
// shell completion), one -o/--output flag for table, json or yaml, a
// version command and --version, and one mapping of errors to exit codes:
// 0 done, 1 failed, 2 the command line is wrong (with a hint to --help).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// ErrUsage marks a command line that cannot be run (exit code 2).
var ErrUsage = errors.New("usage")

// Usagef is an error of the command line.
func Usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

// ranError wraps what a command's RunE returned, to tell it from the
// errors cobra finds before running anything (unknown command or flag,
// wrong number of arguments): those are usage errors, whatever their text.
type ranError struct{ err error }

func (e *ranError) Error() string { return e.err.Error() }
func (e *ranError) Unwrap() error { return e.err }

// Execute runs root on args (without the program name) and returns the
// exit code; errors go to stderr, prefixed with the program's name.
func Execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	markRun(root)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ran *ranError
	if errors.As(err, &ran) && !errors.Is(err, ErrUsage) {
		fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
		return ExitError
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "%s: %v\nSee '%s --help'.\n", root.Name(), strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "), cmd.CommandPath())
	return ExitUsage
}

// markRun wraps every command's RunE so that its errors are told apart.
func markRun(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return &ranError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markRun(sub)
	}
}

// Output is the -o/--output flag.
type Output struct {
	Format string
}

// Formats are the values of -o: wide is the table with every column, as
// kubectl's -o wide (a command without a wider table prints its table).
var Formats = []string{"table", "wide", "json", "yaml"}

// AddOutputFlag adds -o/--output to cmd and its subcommands.
func AddOutputFlag(cmd *cobra.Command) *Output {
	o := &Output{}
	cmd.PersistentFlags().StringVarP(&o.Format, "output", "o", "table", "output format: "+strings.Join(Formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(Formats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// Check reports a format -o does not know, as a usage error.
func (o *Output) Check() error {
	for _, f := range Formats {
		if o.Format == f {
			return nil
		}
	}
	return Usagef("-o %q: want one of %s", o.Format, strings.Join(Formats, ", "))
}

// Wide reports -o wide.
func (o *Output) Wide() bool { return o.Format == "wide" }

// Print writes v as JSON or YAML, or calls table for the table (and for
// wide: the table asks Wide).
func (o *Output) Print(w io.Writer, v any, table func(io.Writer) error) error {
	switch o.Format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return WriteYAML(w, v)
	}
	return table(w)
}

// WriteYAML writes v as YAML with the names its JSON has (the types carry
// json tags only), going through JSON.
func WriteYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(generic); err != nil {
		return err
	}
	return enc.Close()
}

// AddVersion gives root --version and a version command (with -o).
func AddVersion(root *cobra.Command) {
	info := buildinfo.Get()
	root.Version = info.Version
	root.SetVersionTemplate(info.String(root.Name()) + "\n")
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// -o is root's persistent flag where root has one, else the
			// command's own; both are in cmd.Flags() once parsed.
			format, _ := cmd.Flags().GetString("output")
			out := Output{Format: format}
			if err := out.Check(); err != nil {
				return err
			}
			return out.Print(cmd.OutOrStdout(), info, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, info.String(root.Name()))
				return err
			})
		},
	}
	if root.PersistentFlags().Lookup("output") == nil {
		cmd.Flags().StringP("output", "o", "table", "output format: "+strings.Join(Formats, ", "))
	}
	root.AddCommand(cmd)
}
