package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
)

// htpasswdCost is bcrypt's cost for the lines it makes: Apache's htpasswd
// -B default. The receiver verifies any cost; each verification of a line
// not in its cache costs about 50 ms of CPU at this one.
const htpasswdCost = 10

const htpasswdHelp = `Prints one line for RECEIVER_HTPASSWD_FILE: USER:<bcrypt hash> of the
password, as htpasswd -nB USER does, so that rotating the webhook's password
needs nothing beside the project's binaries (docs/registering.md).

The password is read from --password-file (its content, less the trailing
newline, as every *_FILE is read), or from standard input (its first line),
never from the command line, where ps would show it. It must be at least 12
characters long, as RECEIVER_PASSWORD must.

  receiver htpasswd cdse --password-file new-password >> htpasswd
  head -c 24 /dev/urandom | base64 | tee new-password | receiver htpasswd cdse`

// newHtpasswd is `receiver htpasswd USER`.
func newHtpasswd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "htpasswd USER",
		Short: "Print an htpasswd line (bcrypt) for RECEIVER_HTPASSWD_FILE",
		Long:  htpasswdHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			user := args[0]
			if user == "" || strings.ContainsAny(user, ":\r\n") {
				return cli.Usagef("USER %q: a user name has no ':' and no line break", user)
			}
			var password string
			var err error
			if file != "" {
				password, err = config.ReadSecretFile(file)
			} else {
				password, err = firstLine(cmd.InOrStdin())
			}
			if err != nil {
				return fmt.Errorf("read the password: %w", err)
			}
			if len(password) < config.MinPasswordLength {
				return cli.Usagef("the password is shorter than %d characters: the endpoint is public, use a long random one", config.MinPasswordLength)
			}
			hash, err := bcrypt.GenerateFromPassword([]byte(password), htpasswdCost)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s:%s\n", user, hash)
			return err
		},
	}
	cmd.Flags().StringVar(&file, "password-file", "", "file holding the password (default: the first line of standard input)")
	return cmd
}

// firstLine is the first line of r, less its line break.
func firstLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
