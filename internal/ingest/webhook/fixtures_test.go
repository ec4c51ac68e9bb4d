package webhook

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestEveryFixtureStoredAsSent sends every fixture of testdata/notifications
// through the webhook into a real JetStream and checks the stored message:
// subject, headers and the bytes exactly as sent. A new fixture without a
// row here fails the test.
func TestEveryFixtureStoredAsSent(t *testing.T) {
	want := map[string]struct {
		subject, msgID, product, name string
	}{
		"created-s1.json":                   {"cdse.product.created.SENTINEL-1.IW_GRDH_1S-COG", "created:b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "S1A_IW_GRDH_1SDV_20261121T054512_20261121T054537_061234_07A1B2_C3D4_COG.SAFE"},
		"created-s2.json":                   {"cdse.product.created.SENTINEL-2.S2MSI2A", "created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE"},
		"created-s3.json":                   {"cdse.product.created.SENTINEL-3.OL_1_EFR___", "created:c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b", "c3d4e5f6-0718-4293-a4b5-c6d7e8f90a1b", ""},
		"created-s5p.json":                  {"cdse.product.created.SENTINEL-5P.L2__NO2___", "created:d5e6f708-1a2b-4c3d-8e4f-5a6b7c8d9e0f", "d5e6f708-1a2b-4c3d-8e4f-5a6b7c8d9e0f", ""},
		"created-short.json":                {"cdse.product.created.UNKNOWN.UNKNOWN", "created:e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a", "e7f8091a-2b3c-4d5e-8f6a-7b8c9d0e1f2a", ""},
		"modified-s2.json":                  {"cdse.product.modified.SENTINEL-2.S2MSI2A", "modified:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f:2026-11-22T08:01:02.654321Z", "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", ""},
		"deleted-s1.json":                   {"cdse.product.deleted.SENTINEL-1.IW_GRDH_1S-COG", "deleted:b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "b1e2c3d4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", ""},
		"created-s1-push-ackid.json":        {"cdse.product.created.SENTINEL-1.IW_GRDH_1S-COG", "created:3a9c2f4e-1b7d-4e8a-9c6f-2d5e8a1b4c7f", "3a9c2f4e-1b7d-4e8a-9c6f-2d5e8a1b4c7f", "S1C_IW_GRDH_1SDV_20261122T061512_20261122T061537_001234_0A1B2C_9F3E_COG.SAFE"},
		"created-s2-checksums-compact.json": {"cdse.product.created.SENTINEL-2.S2MSI1C", "created:5e1f3a7c-9b2d-4f6e-8a0c-3d7b9e1f5a2c", "5e1f3a7c-9b2d-4f6e-8a0c-3d7b9e1f5a2c", "S2C_MSIL1C_20261122T101301_N0511_R022_T32TNS_20261122T121935.SAFE"},
		"modified-s2-offline-Value.json":    {"cdse.product.modified.SENTINEL-2.S2MSI1C", "modified:5e1f3a7c-9b2d-4f6e-8a0c-3d7b9e1f5a2c:2026-11-23T02:10:40.550013Z", "5e1f3a7c-9b2d-4f6e-8a0c-3d7b9e1f5a2c", ""},
		"deleted-s3-novalue.json":           {"cdse.product.deleted.SENTINEL-3.UNKNOWN", "deleted:9c4b2a1f-7e6d-4c5b-8a3f-1e2d3c4b5a6f", "9c4b2a1f-7e6d-4c5b-8a3f-1e2d3c4b5a6f", "S3A_SL_2_LST____20261120T093011_20261120T093311_20261120T112345_0179_118_136_2340_PS1_O_NR_004.SEN3"},
		"deleted-s5p-entity.json":           {"cdse.product.deleted.SENTINEL-5P.L2__CH4___", "deleted:2b8d4f6a-0c1e-4a3b-9d5f-7e9a1c3b5d7e", "2b8d4f6a-0c1e-4a3b-9d5f-7e9a1c3b5d7e", "S5P_OFFL_L2__CH4____20261119T112233_20261119T130403_36789_03_020600_20261121T032211.nc"},
	}
	files, err := filepath.Glob(filepath.Join(fixtures.Dir(), "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	e := start(t, natstest.RunJetStream(t))
	s, err := e.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("fixture %s has no expectations in this test", name)
			}
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			resp, b := e.post(t, body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"accepted":1`) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			m, err := s.GetLastMsgForSubject(context.Background(), w.subject)
			if err != nil {
				t.Fatal(err)
			}
			// An object is stored as the body, byte for byte; a one-element
			// array as its element's own bytes.
			sent := body
			if trimmed := bytes.TrimSpace(body); trimmed[0] == '[' {
				sent = bytes.TrimSpace(trimmed[1 : len(trimmed)-1])
			}
			if !bytes.Equal(m.Data, sent) {
				t.Errorf("stored bytes differ from those sent (%d vs %d bytes)", len(m.Data), len(sent))
			}
			for k, v := range map[string]string{"Nats-Msg-Id": w.msgID, "Cdse-Product-Id": w.product, "Cdse-Source": "push"} {
				if got := m.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if w.name != "" && m.Header.Get("Cdse-Product-Name") != w.name {
				t.Errorf("Cdse-Product-Name = %q, want %q", m.Header.Get("Cdse-Product-Name"), w.name)
			}
			// What consumers read through the public package agrees with
			// the subject and headers.
			n, err := event.DecodeData(m.Data, m.Header)
			if err != nil {
				t.Fatalf("event.DecodeData: %v", err)
			}
			if n.ID != w.msgID || n.ProductID != w.product || n.Source != "push" {
				t.Errorf("decoded id %q, product %q, source %q", n.ID, n.ProductID, n.Source)
			}
			if n.ProductType != "" {
				if got := "cdse.product." + string(n.Event) + "." + n.Collection + "." + n.ProductType; got != w.subject {
					t.Errorf("decoded event, collection and product type make %q, not the subject", got)
				}
			}
		})
	}
	if n := len(e.quarantined(t)); n != 0 {
		t.Errorf("%d fixtures were quarantined", n)
	}
}
