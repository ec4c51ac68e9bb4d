package app

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestScaleOut: two receivers on a 3-node NATS cluster with the stream
// replicated 3 times; notifications with duplicates spread over both
// receivers; one NATS node stopped mid-stream. Every notification that got
// a 2xx is in the stream exactly once, and none twice.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	servers := natstest.RunCluster(t, 3)
	url := natstest.ClusterURL(servers)
	var apps []*App
	var cfgs []config.Config
	for range 2 {
		c := testConfig(t, "")
		c.NATSURL = url
		c.StreamReplicas = 3
		c.PublishTimeout = 3 * time.Second
		a, _ := startApp(t, c)
		apps, cfgs = append(apps, a), append(cfgs, c)
	}
	template := fixtures.Notification(t, "created-s2.json")
	const products = 300
	var (
		mu    sync.Mutex
		acked = map[int]bool{}
		sent  atomic.Int64
		wg    sync.WaitGroup
	)
	post := func(i, via int) {
		id := fmt.Sprintf("0f6b4c1e-8d2a-4f3b-9c5e-%012d", i)
		body := bytes.ReplaceAll(template, []byte("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"), []byte(id))
		req, _ := http.NewRequest(http.MethodPost, "http://"+apps[via].WebhookAddr()+cfgs[via].Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(cfgs[via].Username, cfgs[via].Password)
		resp, err := http.DefaultClient.Do(req)
		sent.Add(1)
		if err != nil {
			return
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			mu.Lock()
			acked[i] = true
			mu.Unlock()
		}
	}
	work := make(chan int)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				post(i, (i+w)%2) // one receiver
				if i%3 == 0 {    // a third delivered again,
					post(i, (i+w+1)%2) // through the other receiver
				}
			}
		}()
	}
	for i := range products {
		if i == products/3 {
			// A NATS node goes away mid-stream.
			servers[1].Shutdown()
		}
		work <- i
	}
	close(work)
	wg.Wait()

	// Read the stream from a surviving node.
	js, closeNC := natstest.JetStream(t, servers[0].ClientURL()+","+servers[2].ClientURL())
	defer closeNC()
	seen := natstest.CountBy(natstest.StreamMessages(t, js, cfgs[0].Stream), "Cdse-Product-Id")
	for i := range products {
		id := fmt.Sprintf("0f6b4c1e-8d2a-4f3b-9c5e-%012d", i)
		switch {
		case seen[id] > 1:
			t.Errorf("%s stored %d times", id, seen[id])
		case acked[i] && seen[id] != 1:
			t.Errorf("%s got a 2xx but is not in the stream", id)
		}
	}
	t.Logf("%d requests, %d of %d products acknowledged, %d stored", sent.Load(), len(acked), products, len(seen))
	if len(acked) < products/2 {
		t.Errorf("only %d of %d products acknowledged: the receivers did not keep working after the node loss", len(acked), products)
	}
}
