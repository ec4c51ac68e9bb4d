package backfill

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
)

// ExtendComplete moves the interest's complete ranges back to the run's
// --since (internal/stream/complete's Extend), for each event it backfilled, when
// the run listed the interest's own filter and its range joins the
// ranges kept. A failure is logged: the copies are stored all the same.
func ExtendComplete(ctx context.Context, topo complete.Stores, in *interestfile.Interest, filter string, sum Summary, since, until time.Time, log logrus.FieldLogger) {
	own := strings.TrimSpace(in.Filter.String())
	if strings.TrimSpace(filter) != own {
		log.Info("the complete range of the interest is not extended: --filter is not the interest's own")
		return
	}
	tr, err := complete.New(topo, prometheus.NewRegistry(), log)
	if err != nil {
		log.WithError(err).Warn("complete ranges")
		return
	}
	scope := complete.Scope{Name: in.Name, Filter: in.RangeFilter(), Events: in.Events}
	for _, p := range sum.Events {
		if !slices.Contains(in.Events, p.Event) {
			continue
		}
		moved, err := tr.Extend(ctx, scope, p.Event, since, until)
		l := log.WithField("interest", in.Name).WithField("event", p.Event)
		switch {
		case err != nil:
			l.WithError(err).Warn("the complete range could not be extended back")
		case moved:
			l.WithField("from", since.UTC().Format(time.RFC3339)).Info("complete range extended back")
		default:
			l.Info("complete range not extended: none yet (a reconcile pass starts it), or the run does not reach it")
		}
	}
}
