package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// fetcherDurable is the fetcher's durable in the permissions fixture
// (Options.FetchConsumer).
const fetcherDurable = "fetcher"

// TestConsumersCannotTakeTheFetchersDurable: whether anonymous or with the
// consumer login, a consumer can neither create nor change the fetcher's
// durable (any CREATE form, the legacy one that names it in the body too), delete it, pull from it, nor acknowledge a
// message it delivered (either ack form): its configuration and its
// position are the fetcher's. Its own durables stay its to make
// (TestConsumersRead), and the fetcher's login keeps them all
// (TestFetcherLogin).
//
// The receiver's own durable (topology.VersionsConsumer, which keeps the
// versions and publishes the notices of supersession) is guarded alike,
// from the fetcher's login too (TestFetcherLogin).
func TestConsumersCannotTakeTheFetchersDurable(t *testing.T) {
	for _, mode := range consumerModes {
		for _, durable := range []string{fetcherDurable, topology.VersionsConsumer} {
			t.Run(mode.name+"/"+durable, func(t *testing.T) {
				takeTheDurable(t, mode.opts, mode.login, durable)
			})
		}
	}
}

// takeTheDurable tries, with login, every way to take over durable.
func takeTheDurable(t *testing.T, opts Options, login []nats.Option, durable string) {
	t.Helper()
	f := startPermissionsFixture(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The durable as its stage declares it, with one message
	// delivered and not yet acknowledged: its real ack subject is what
	// a consumer would send.
	want := jetstream.ConsumerConfig{Durable: durable, FilterSubjects: []string{"cdse.product.created.>"},
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxAckPending: 4, MaxDeliver: -1}
	cons, err := f.js.CreateOrUpdateConsumer(ctx, testStream, want)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var ackSubject string
	for m := range batch.Messages() {
		ackSubject = m.Reply()
	}
	if !strings.HasPrefix(ackSubject, "$JS.ACK."+testStream+"."+durable+".") {
		t.Fatalf("the delivered message's ack subject %q", ackSubject)
	}
	// The same ack in the form with domain and account hash.
	ackV2 := "$JS.ACK._.anyhash." + strings.TrimPrefix(ackSubject, "$JS.ACK.") + ".token"
	api := "$JS.API.CONSUMER."
	takeOver := `{"stream_name":"` + testStream + `","config":{"durable_name":"` + durable + `","ack_policy":"explicit","max_ack_pending":1,"filter_subject":"cdse.product.deleted.>"}}`
	for _, d := range []struct{ name, subject, data string }{
		{"create or update it", api + "CREATE." + testStream + "." + durable, takeOver},
		{"create or update it with a filter", api + "CREATE." + testStream + "." + durable + ".cdse.product.deleted.>", takeOver},
		{"create or update it, named in the body (legacy ephemeral)", api + "CREATE." + testStream,
			`{"stream_name":"` + testStream + `","config":{"name":"` + durable + `","ack_policy":"explicit","max_ack_pending":1}}`},
		{"create or update it (legacy durable)", api + "DURABLE.CREATE." + testStream + "." + durable, takeOver},
		{"delete it", api + "DELETE." + testStream + "." + durable, ``},
		{"pull from it", api + "MSG.NEXT." + testStream + "." + durable, `{"batch":1,"expires":1000000000}`},
		{"acknowledge its message", ackSubject, `+ACK`},
		{"acknowledge its message (domain form)", ackV2, `+ACK`},
	} {
		t.Run(d.name, func(t *testing.T) {
			expectDenied(t, f.srv.ClientURL(), login, d.subject, []byte(d.data))
		})
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("the durable %s: %v", durable, err)
	}
	if c := info.Config; c.MaxAckPending != want.MaxAckPending || len(c.FilterSubjects) != 1 || c.FilterSubjects[0] != want.FilterSubjects[0] || c.FilterSubject != "" {
		t.Errorf("the durable %s changed: %+v", durable, c)
	}
	if info.AckFloor.Stream != 0 || info.NumAckPending != 1 {
		t.Errorf("the message of %s acknowledged by another: ack floor %d, %d pending", durable, info.AckFloor.Stream, info.NumAckPending)
	}
}
