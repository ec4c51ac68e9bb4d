package binary_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// TestBinaryQuarantineByID: replay and drop take the sequences list shows,
// as kubectl takes names: `replay SEQ` replays only that body, `drop SEQ`
// removes a body that will never be valid, and a sequence not in the
// quarantine is said (exit 1) without stopping the others. Before, `replay
// 1` was an unknown command and nothing could drop a body.
func TestBinaryQuarantineByID(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dataDir := t.TempDir()
	p := startReceiver(t, dataDir)
	env := []string{"RECEIVER_DATA_DIR=" + dataDir}
	for _, name := range []string{"created-s2.json", "created-s1.json", "created-s3.json"} {
		refused := bytes.Replace(fixtures.Notification(t, name), []byte(`"created"`), []byte(`"Created"`), 1)
		if code, resp := p.post(t, refused); code != 400 || !strings.Contains(resp, `"quarantined":true`) {
			t.Fatalf("%s: %d %s", name, code, resp)
		}
	}
	l := listQuarantine(t, env)
	if len(l) != 3 {
		t.Fatalf("list: %+v", l)
	}
	first, second, third := strconv.FormatUint(l[0].Seq, 10), strconv.FormatUint(l[1].Seq, 10), strconv.FormatUint(l[2].Seq, 10)

	// replay SEQ: that body only (still refused, so it stays).
	out, errOut, code := command(t, env, "quarantine", "replay", first, "-o", "json")
	var sum struct {
		Checked, StillRefused int
		Items                 []struct{ Seq uint64 }
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Checked != 1 || sum.StillRefused != 1 || len(sum.Items) != 1 || sum.Items[0].Seq != l[0].Seq {
		t.Fatalf("replay %s: exit %d: %s %s", first, code, out, errOut)
	}
	// drop --dry-run removes nothing; drop removes the bodies named.
	if out, errOut, code := command(t, env, "quarantine", "drop", "--dry-run", first); code != 0 || !strings.Contains(out, "would-drop") {
		t.Fatalf("drop --dry-run: exit %d: %s %s", code, out, errOut)
	}
	if n := len(listQuarantine(t, env)); n != 3 {
		t.Fatalf("a dry run dropped: %d left", n)
	}
	if out, errOut, code := command(t, env, "quarantine", "drop", first, third); code != 0 || strings.Count(out, "dropped") != 2 {
		t.Fatalf("drop: exit %d: %s %s", code, out, errOut)
	}
	if l := listQuarantine(t, env); len(l) != 1 || strconv.FormatUint(l[0].Seq, 10) != second {
		t.Fatalf("after drop: %+v", l)
	}
	// A sequence not there: said, exit 1, the others done all the same.
	out, errOut, code = command(t, env, "quarantine", "drop", first, second)
	if code != 1 || !strings.Contains(out, "not-found") || !strings.Contains(errOut, "not in the quarantine") {
		t.Fatalf("drop of a missing sequence: exit %d: %s %s", code, out, errOut)
	}
	if n := len(listQuarantine(t, env)); n != 0 {
		t.Fatalf("the present sequence was not dropped beside the missing one: %d left", n)
	}
	// Usage errors: no sequence, not a number.
	if _, errOut, code := command(t, env, "quarantine", "drop"); code != 2 {
		t.Errorf("drop without SEQ: exit %d: %s", code, errOut)
	}
	if _, errOut, code := command(t, env, "quarantine", "replay", "x1"); code != 2 || !strings.Contains(errOut, "not a sequence number") {
		t.Errorf("replay x1: exit %d: %s", code, errOut)
	}
}
