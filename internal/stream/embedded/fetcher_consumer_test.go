package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
func TestConsumersCannotTakeTheFetchersDurable(t *testing.T) {
	for _, mode := range consumerModes {
		t.Run(mode.name, func(t *testing.T) {
			f := startPermissionsFixture(t, mode.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The fetcher's durable as the fetcher declares it, with one
			// message delivered and not yet acknowledged: its real ack
			// subject is what a consumer would send.
			want := jetstream.ConsumerConfig{Durable: fetcherDurable, FilterSubjects: []string{"cdse.product.created.>"},
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
			if !strings.HasPrefix(ackSubject, "$JS.ACK."+testStream+"."+fetcherDurable+".") {
				t.Fatalf("the delivered message's ack subject %q", ackSubject)
			}
			// The same ack in the form with domain and account hash.
			ackV2 := "$JS.ACK._.anyhash." + strings.TrimPrefix(ackSubject, "$JS.ACK.") + ".token"
			api := "$JS.API.CONSUMER."
			takeOver := `{"stream_name":"` + testStream + `","config":{"durable_name":"` + fetcherDurable + `","ack_policy":"explicit","max_ack_pending":1,"filter_subject":"cdse.product.deleted.>"}}`
			for _, d := range []struct{ name, subject, data string }{
				{"create or update it", api + "CREATE." + testStream + "." + fetcherDurable, takeOver},
				{"create or update it with a filter", api + "CREATE." + testStream + "." + fetcherDurable + ".cdse.product.deleted.>", takeOver},
				{"create or update it, named in the body (legacy ephemeral)", api + "CREATE." + testStream,
					`{"stream_name":"` + testStream + `","config":{"name":"` + fetcherDurable + `","ack_policy":"explicit","max_ack_pending":1}}`},
				{"create or update it (legacy durable)", api + "DURABLE.CREATE." + testStream + "." + fetcherDurable, takeOver},
				{"delete it", api + "DELETE." + testStream + "." + fetcherDurable, ``},
				{"pull from it", api + "MSG.NEXT." + testStream + "." + fetcherDurable, `{"batch":1,"expires":1000000000}`},
				{"acknowledge its message", ackSubject, `+ACK`},
				{"acknowledge its message (domain form)", ackV2, `+ACK`},
			} {
				t.Run(d.name, func(t *testing.T) {
					expectDenied(t, f.srv.ClientURL(), mode.login, d.subject, []byte(d.data))
				})
			}
			info, err := cons.Info(ctx)
			if err != nil {
				t.Fatalf("the fetcher's durable: %v", err)
			}
			if c := info.Config; c.MaxAckPending != want.MaxAckPending || len(c.FilterSubjects) != 1 || c.FilterSubjects[0] != want.FilterSubjects[0] || c.FilterSubject != "" {
				t.Errorf("the fetcher's durable changed: %+v", c)
			}
			if info.AckFloor.Stream != 0 || info.NumAckPending != 1 {
				t.Errorf("the fetcher's message acknowledged by a consumer: ack floor %d, %d pending", info.AckFloor.Stream, info.NumAckPending)
			}
		})
	}
}
