// Package adminpage reads a JSON page of a running binary's admin
// listener (the receiver's and the fetcher's /status): one bounded GET
// whose errors name what was asked, shared by the commands that read them.
package adminpage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// StatusPath is where the admin listeners serve their status.
const StatusPath = "/status"

// Get reads the JSON page at path of the admin base URL (http://host:port)
// into a T; what names it in errors ("receiver status").
func Get[T any](ctx context.Context, client *http.Client, admin, path, what string) (*T, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(admin, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: %s answered %s: %s", what, req.URL, resp.Status, strings.TrimSpace(string(b)))
	}
	var v T
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", what, req.URL, err)
	}
	return &v, nil
}
