package fetch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
)

// TestProgress: a download logs when it starts (its size; from which
// byte when it resumes), then its bytes, rate and ETA on LogEvery, and
// its progress func is told the same as the bytes flow.
func TestProgress(t *testing.T) {
	const size = 2 << 20
	tests := []struct {
		name string
		// fault is the simulator's fault on the product, if any.
		fault func(id string) cdsesim.Fault
		// resumed says a "download resumed" line must name a byte > 0.
		resumed bool
	}{
		{name: "whole"},
		{name: "cut and resumed", resumed: true, fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultCut, After: size / 2, Count: 1, Product: id}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// About a second a download: several progress lines.
			f := setup(t, cdsesim.Options{DownloadRate: 2 << 20})
			p, _ := f.product(t, sized(size))
			if tt.fault != nil {
				if err := f.sim.AddFault(tt.fault(p.ID)); err != nil {
					t.Fatal(err)
				}
			}
			o := f.options()
			o.ProgressEvery, o.LogEvery = 50*time.Millisecond, 100*time.Millisecond
			log, hook := logtest.NewNullLogger()
			log.SetLevel(logrus.InfoLevel)
			tgt, err := file.New(f.dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			fe, err := New(o, f.tokens, tgt, f.reg, log)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var told []Progress
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := fe.Fetch(ctx, p, "p.zip", func(pr Progress) { mu.Lock(); told = append(told, pr); mu.Unlock() }); err != nil {
				t.Fatal(err)
			}

			var started, resumedFrom, progress int
			for _, e := range hook.AllEntries() {
				switch e.Message {
				case "download started":
					if e.Data["size"] == int64(size) {
						started++
					}
				case "download resumed":
					if from, _ := e.Data["from_byte"].(int64); from > 0 && e.Data["size"] == int64(size) {
						resumedFrom++
					}
				case "download progress":
					if e.Data["rate"] != nil && e.Data["eta"] != nil && e.Data["bytes"].(int64) > 0 {
						progress++
					}
				}
			}
			if started != 1 || (tt.resumed && resumedFrom != 1) || (!tt.resumed && resumedFrom != 0) || progress == 0 {
				t.Errorf("started %d, resumed %d, progress lines %d; the log:", started, resumedFrom, progress)
				for _, e := range hook.AllEntries() {
					t.Logf("%s %v", e.Message, e.Data)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			var withETA int
			var last int64
			for _, pr := range told {
				if pr.ProductID != p.ID || pr.Key != "p.zip" || pr.Total != size || pr.Held > size {
					t.Fatalf("told %+v", pr)
				}
				if pr.Waiting == "" && pr.Held < last && pr.From == 0 {
					t.Errorf("held went back from %d to %d without a restart", last, pr.Held)
				}
				if pr.ETA > 0 && pr.Rate > 0 {
					withETA++
				}
				last = pr.Held
			}
			if withETA == 0 {
				t.Errorf("the progress func never had a rate and an ETA: %+v", told)
			}
		})
	}
}
