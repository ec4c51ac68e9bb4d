package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults of a schedule.
const (
	KillReceiver Kind = "kill -9 receiver"       // SIGKILL, restart after the duration
	KillNode     Kind = "kill -9 NATS node"      // SIGKILL, restart on its store after the duration
	PauseNode    Kind = "SIGSTOP NATS node"      // frozen for the duration, then SIGCONT
	SlowNode     Kind = "slow NATS node"         // SIGSTOP/SIGCONT every 100 ms for the duration
	LoseQuorum   Kind = "kill -9 two NATS nodes" // the R3 stream has no quorum for the duration
	FreezeQuorum Kind = "SIGSTOP two NATS nodes" // the same by freezing
	CutNATS      Kind = "cut a receiver's NATS"  // its connections to every node closed and refused

	// The fetcher's, on a schedule of their own (FetchSchedule).
	KillFetcher    Kind = "kill -9 fetcher"      // SIGKILL, restart after the duration
	KillS3         Kind = "kill -9 S3 server"    // SIGKILL, restart on the same port and data
	CutFetcherNATS Kind = "cut a fetcher's NATS" // as CutNATS
	PauseFetcher   Kind = "SIGSTOP fetcher"      // longer than FETCH_ACK_WAIT, then SIGCONT
)

// Fault is one scheduled fault.
type Fault struct {
	Kind     Kind
	At       time.Duration // from the start of the run
	For      time.Duration
	Receiver int   // KillReceiver, CutNATS; the fetcher replica of KillFetcher, CutFetcherNATS, PauseFetcher
	Nodes    []int // the NATS nodes hit
	// Filled in by the run: how long until a replica answered 2xx again
	// after the fault ended (0 when no request came).
	Recovery time.Duration
	Ready    time.Duration // KillReceiver: from the restart until /readyz said 200
}

func (f Fault) String() string {
	target := ""
	switch f.Kind {
	case KillReceiver, CutNATS:
		target = fmt.Sprintf("r%d", f.Receiver+1)
	case KillFetcher, CutFetcherNATS, PauseFetcher:
		target = fmt.Sprintf("f%d", f.Receiver+1)
	case KillS3:
		target = "s3"
	default:
		var ns []string
		for _, n := range f.Nodes {
			ns = append(ns, fmt.Sprintf("n%d", n+1))
		}
		target = strings.Join(ns, "+")
	}
	return fmt.Sprintf("%6.1fs %-24s %-5s for %.1fs", f.At.Seconds(), f.Kind, target, f.For.Seconds())
}

// Schedule draws the faults of a run of length d from seed: one at a
// time, each kind in turn in a shuffled order (so a short run still has
// every kind), with a pause of 2–4 s after each for the system to settle
// and the traffic to show whether it did. Two-node faults are short (the
// stream is unavailable meanwhile).
func Schedule(seed int64, d time.Duration) []Fault {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>32^0x9e3779b97f4a7c15))
	kinds := []Kind{KillReceiver, KillNode, PauseNode, SlowNode, LoseQuorum, FreezeQuorum, CutNATS}
	between := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Second))
	}
	var out []Fault
	at := 3 * time.Second // the first seconds run clean
	var order []Kind
	for {
		if len(order) == 0 {
			order = append([]Kind(nil), kinds...)
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		f := Fault{Kind: order[0], At: at}
		order = order[1:]
		switch f.Kind {
		case KillReceiver:
			f.Receiver, f.For = r.IntN(2), between(1, 4)
		case CutNATS:
			f.Receiver, f.For = r.IntN(2), between(1, 4)
		case KillNode:
			f.Nodes, f.For = []int{r.IntN(3)}, between(2, 6)
		case PauseNode:
			f.Nodes, f.For = []int{r.IntN(3)}, between(1, 5)
		case SlowNode:
			f.Nodes, f.For = []int{r.IntN(3)}, between(3, 6)
		case LoseQuorum, FreezeQuorum:
			p := r.Perm(3)
			f.Nodes, f.For = []int{p[0], p[1]}, between(2, 4)
		}
		if f.At+f.For > d-2*time.Second {
			return out
		}
		out = append(out, f)
		at = f.At + f.For + between(2, 4)
	}
}

// FetchSchedule draws the fetcher's faults of a run of length d from
// seed, beside Schedule's (they hit other processes): each kind once,
// the kills first, then again while the run lasts, except in a run under
// two minutes (make test's), which has each once at most. The SIGSTOP outlasts
// ackWait, so that NATS gives the frozen replica's products to the other.
func FetchSchedule(seed int64, d, ackWait time.Duration) []Fault {
	r := rand.New(rand.NewPCG(uint64(seed)^0x5bd1e995, 13))
	between := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Second))
	}
	var out []Fault
	at := 5 * time.Second // downloads under way first
	for cycle := 0; cycle == 0 || d >= 2*time.Minute; cycle++ {
		// The two kills first (each at most 5 s and a pause of 4 s), so
		// that even a short run has both.
		kills, others := []Kind{KillFetcher, KillS3}, []Kind{CutFetcherNATS, PauseFetcher}
		r.Shuffle(2, func(i, j int) { kills[i], kills[j] = kills[j], kills[i] })
		r.Shuffle(2, func(i, j int) { others[i], others[j] = others[j], others[i] })
		order := append(kills, others...)
		for _, k := range order {
			f := Fault{Kind: k, At: at, Receiver: r.IntN(2)}
			switch k {
			case KillFetcher:
				f.For = between(1, 4)
			case KillS3:
				f.For = between(2, 5)
			case CutFetcherNATS:
				f.For = between(3, 8) // past half the ack wait (5 s) or not
			case PauseFetcher:
				f.For = ackWait + between(1, 4)
			}
			if f.At+f.For > d-2*time.Second {
				return out
			}
			out = append(out, f)
			at = f.At + f.For + between(2, 4)
		}
	}
	return out
}
