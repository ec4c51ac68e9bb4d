package fetcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
)

// A product's events can be taken by two replicas at once (its created
// and modified events, a redelivery): the local key lock serialises them
// in one replica only, and a directory's partial is locked, but two
// replicas writing one object into S3 download it twice at once, over
// the account's cap. So each download holds a lease on its key in a KV
// bucket of the fetcher's own, across replicas: created if absent,
// renewed with the in-progress acks, deleted when done. The bucket's TTL
// is FETCH_ACK_WAIT, so a replica killed while holding one frees it when
// NATS would give its message to another anyway.

// LeaseBucket is the KV bucket of the fetcher's leases beside its stream
// (FETCH_STREAM): two deployments with streams of their own never share
// leases.
func LeaseBucket(stream string) string { return stream + "_LEASES" }

// leaseWait is how often a replica waiting for another's lease looks
// again: a product's second event waits the first one's download, so
// a second is nothing beside it.
const leaseWait = time.Second

// errLeaseLost cuts a download whose lease another replica holds now:
// this one could not renew it in time (frozen, or cut off from NATS).
var errLeaseLost = errors.New("the product's lease is another replica's now: the download stops, its partial kept")

// leases are this replica's side of the lease bucket.
type leases struct {
	kv    jetstream.KeyValue
	owner string // this process, in the lease's value
}

// lease is one key held.
type lease struct {
	l   *leases
	key string // in the bucket
	val []byte
	rev uint64 // renew's until it returns, then release's
	// stop ends the renewal and done is closed once it has returned.
	stop context.CancelFunc
	done chan struct{}
}

// declareLeases creates or updates the lease bucket, with the product
// stream's replicas (a lease on a lost node would stop every download).
func (a *App) declareLeases(ctx context.Context) error {
	replicas := 1
	if s, err := a.js.Stream(ctx, a.cfg.ProductStream.Stream); err == nil {
		replicas = max(s.CachedInfo().Config.Replicas, 1)
	}
	kv, err := a.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeaseBucket(a.cfg.Stream),
		Description: "the fetcher's leases: which replica downloads which product now",
		TTL:         a.cfg.AckWait,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return fmt.Errorf("lease bucket %s: %w", LeaseBucket(a.cfg.Stream), err)
	}
	host, _ := os.Hostname()
	a.leases = &leases{kv: kv, owner: host + "/" + uuid.NewString()}
	return nil
}

// leaseKey is key's name in the bucket: a hash, because an object key
// may hold what a KV key may not.
func leaseKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// acquire waits until this replica holds key's lease, or ctx ends (the
// heartbeat cuts it when NATS cannot be reached).
func (l *leases) acquire(ctx context.Context, log logrus.FieldLogger, key string, seq uint64) (*lease, error) {
	k := leaseKey(key)
	val, _ := json.Marshal(map[string]any{"owner": l.owner, "key": key, "stream_seq": seq, "since": time.Now().UTC()})
	said := false
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rev, err := l.kv.Create(actx, k, val)
		cancel()
		if err == nil {
			return &lease{l: l, key: k, val: val, rev: rev}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, jetstream.ErrKeyExists) && !said {
			said = true
			holder := ""
			gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if e, err := l.kv.Get(gctx, k); err == nil {
				holder = string(e.Value())
			}
			cancel()
			log.WithField("holder", holder).Info("another replica is downloading this product: waiting for it")
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			log.WithError(err).Warn("cannot take the product's lease; trying again")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(leaseWait):
		}
	}
}

// keep renews the lease in the background until release: see renew.
func (ls *lease) keep(ctx context.Context, ttl time.Duration, cut context.CancelCauseFunc) {
	ctx, ls.stop = context.WithCancel(ctx)
	ls.done = make(chan struct{})
	go func() {
		defer close(ls.done)
		ls.renew(ctx, ttl, cut)
	}()
}

// renew keeps the lease every quarter of ttl while ctx lasts; when it
// finds the lease gone or another's, or could not renew it for three
// quarters of ttl, it cuts the work.
func (ls *lease) renew(ctx context.Context, ttl time.Duration, cut context.CancelCauseFunc) {
	cause := keepAlive(ctx, ttl/4, ttl*3/4, func(rctx context.Context) error {
		rev, err := ls.l.kv.Update(rctx, ls.key, ls.val, ls.rev)
		if err == nil {
			ls.rev = rev
		}
		return err
	}, func(time.Duration) error {
		// Not renewed for three quarters of the TTL: the next try may
		// come too late. Later than the heartbeat's cut at half the ack
		// wait, which holds the work when NATS as a whole is out of
		// reach; this one is for the bucket alone (its node lost while
		// the product stream answers).
		return errLeaseLost
	}, func(err error, _ time.Duration) error {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return errLeaseLost // not at our revision: expired and taken, or deleted
		}
		return nil
	})
	if cause != nil {
		cut(cause)
	}
}

// release deletes the lease if it is still this replica's; a lease left
// (NATS unreachable now) expires with the bucket's TTL.
func (ls *lease) release(ctx context.Context) {
	if ls.stop != nil {
		ls.stop()
		<-ls.done
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = ls.l.kv.Delete(ctx, ls.key, jetstream.LastRevision(ls.rev))
}
