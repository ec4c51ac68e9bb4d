package embedded

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
)

// LoginFile is where the receiver with the embedded server leaves the
// login of its own connection, for the one-shot commands (receiver
// quarantine, backfill) run beside it — in the same pod, with access to the
// same data directory. It is made anew at every start.
const LoginFile = "nats-admin.json"

type login struct {
	URL      string `json:"url"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// WriteLogin writes the server's URL and the receiver's credentials
// (0600), so that only who can read the data directory — which holds the
// whole stream anyway — can use them.
func (s *Server) WriteLogin(dataDir string) error {
	b, _ := json.Marshal(login{URL: s.ClientURL(), User: s.User, Password: s.Password})
	path := filepath.Join(dataDir, LoginFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadLogin is how a command reaches the running receiver's embedded
// server: the login it left in dataDir.
func ReadLogin(dataDir string) (natsconn.Options, error) {
	path := filepath.Join(dataDir, LoginFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return natsconn.Options{}, fmt.Errorf("no NATS_URL, and the embedded server's login %s cannot be read (%w): run this where the receiver runs, with the same RECEIVER_DATA_DIR, while it runs", path, err)
	}
	var l login
	if err := json.Unmarshal(b, &l); err != nil {
		return natsconn.Options{}, fmt.Errorf("%s: %w", path, err)
	}
	// The commands take their replies where the receiver does: consumers
	// cannot publish there.
	return natsconn.Options{URL: l.URL, User: l.User, Password: l.Password, InboxPrefix: ReceiverInboxPrefix}, nil
}
