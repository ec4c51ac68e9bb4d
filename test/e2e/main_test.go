package e2e

import (
	"os"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}
