package loadgen

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection that writes prepared requests
// and reads their answers with as little work as it can. The generator runs
// on the same cores as the servers it measures, so every microsecond it
// spends is taken from them: net/http's client (a read and a write goroutine
// per connection, channels between them, a header map per answer) cost
// about as much CPU per request as the bare reference server itself.
type conn struct {
	timeout time.Duration
	nc      net.Conn
	br      *bufio.Reader
	req     []byte // the request being built
}

// target is what every request of a run shares.
type target struct {
	addr string // host:port
	head []byte // request line and headers, up to "Content-Length: "
}

func newTarget(rawURL, user, password string) (target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return target{}, err
	}
	if u.Scheme != "http" {
		return target{}, fmt.Errorf("loadgen speaks plain http, not %q", u.Scheme)
	}
	path := u.RequestURI()
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, u.Host)
	if user != "" || password != "" {
		fmt.Fprintf(&b, "Authorization: Basic %s\r\n", basic(user, password))
	}
	b.WriteString("Content-Type: application/json\r\nContent-Length: ")
	return target{addr: u.Host, head: b.Bytes()}, nil
}

// do sends one POST with body and returns the status code, the answer's
// body being read and discarded so the connection can be reused.
func (c *conn) do(t target, body []byte) (int, error) {
	if c.nc == nil {
		nc, err := net.DialTimeout("tcp", t.addr, c.timeout)
		if err != nil {
			return 0, err
		}
		c.nc, c.br = nc, bufio.NewReaderSize(nc, 4096)
	}
	c.req = append(append(strconv.AppendInt(append(c.req[:0], t.head...), int64(len(body)), 10), "\r\n\r\n"...), body...)
	_ = c.nc.SetDeadline(time.Now().Add(c.timeout))
	if _, err := c.nc.Write(c.req); err != nil {
		c.close()
		return 0, err
	}
	status, keep, err := readResponse(c.br)
	if err != nil || !keep {
		c.close()
	}
	return status, err
}

func (c *conn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc, c.br = nil, nil
	}
}

var errMalformed = errors.New("malformed HTTP response")

// readResponse reads one HTTP/1.1 response: the status, whether the
// connection stays open, the body (by Content-Length, or chunked) discarded.
func readResponse(br *bufio.Reader) (status int, keepAlive bool, err error) {
	line, err := readLine(br)
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	keepAlive = line[7] == '1'
	length, chunked := int64(-1), false
	for {
		line, err := readLine(br)
		if err != nil {
			return 0, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, fmt.Errorf("%w: header %q", errMalformed, line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return 0, false, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keepAlive = false
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status/100 == 1:
	case chunked:
		if _, err = io.Copy(io.Discard, httputil.NewChunkedReader(br)); err != nil {
			break
		}
		// The chunked reader stops after the last chunk's size line; the
		// trailer section, ending in an empty line, is still to be read.
		for {
			line, lerr := readLine(br)
			if err = lerr; err != nil || len(line) == 0 {
				break
			}
		}
	case length >= 0:
		_, err = br.Discard(int(length))
	default: // the body ends when the server closes the connection
		_, err = io.Copy(io.Discard, br)
		keepAlive = false
	}
	return status, keepAlive, err
}

// readLine returns a line without its CRLF; the bytes are valid until the
// next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errMalformed, br.Size())
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
