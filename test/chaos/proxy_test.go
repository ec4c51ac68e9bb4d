package chaos

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

// tcpProxy forwards one receiver's connections to one NATS node, so that
// the harness can cut that receiver's NATS connection as a network would:
// open connections are closed and new ones refused until the cut ends.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
	wg    sync.WaitGroup
}

func newTCPProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *tcpProxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut closes every open connection and refuses new ones (true), or
// lets them through again (false).
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.setCut(true)
	p.wg.Wait()
}

// front is the load balancer in front of the receiver replicas: round
// robin, and, like nginx's proxy_next_upstream error, a request whose
// connection was refused goes to the next replica (nothing was sent). A
// replica that dies mid-request gives 502, which the catalogue retries.
// It keeps the ledger the check needs: the dedupe key of every
// notification a replica acknowledged with a 2xx, and every status with
// its time.
type front struct {
	backends []string // webhook URLs
	next     atomic.Uint64
	client   *http.Client

	mu      sync.Mutex
	acked   map[string]bool
	answers []answer
}

type answer struct {
	at     time.Time
	status int
}

func newFront(backends []string) *front {
	return &front{backends: backends, acked: map[string]bool{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		f.reply(w, http.StatusBadRequest, nil, nil)
		return
	}
	start := int(f.next.Add(1))
	for i := range f.backends {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, f.backends[(start+i)%len(f.backends)], bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := f.client.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				continue
			}
			f.reply(w, http.StatusBadGateway, nil, nil)
			return
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			f.reply(w, http.StatusBadGateway, nil, nil)
			return
		}
		if resp.StatusCode/100 == 2 {
			f.ack(body)
		}
		f.reply(w, resp.StatusCode, resp.Header, out)
		return
	}
	f.reply(w, http.StatusBadGateway, nil, nil)
}

func (f *front) reply(w http.ResponseWriter, status int, h http.Header, body []byte) {
	f.mu.Lock()
	f.answers = append(f.answers, answer{time.Now(), status})
	f.mu.Unlock()
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	w.Write(body)
}

// ack notes the dedupe keys of a body a replica acknowledged.
func (f *front) ack(body []byte) {
	ns, err := notification.Parse(body, 1000)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range ns {
		f.acked[ns[i].DedupeKey()] = true
	}
}

func (f *front) snapshot() (map[string]bool, []answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	acked := make(map[string]bool, len(f.acked))
	for k := range f.acked {
		acked[k] = true
	}
	return acked, append([]answer(nil), f.answers...)
}
