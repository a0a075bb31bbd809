package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/layaapp/laya/complete"
)

// Completer is what the server serves; *complete.Completer is one.
type Completer interface {
	Complete(ctx context.Context, client string, req complete.Request, onText func(string)) (complete.Suggestion, error)
}

// Options bounds what one connection may ask of the server. Zero values select the defaults.
type Options struct {
	// MaxRequestBytes is the longest request line accepted; 0 = 1 MiB.
	MaxRequestBytes int
	// Rate is the sustained requests per second a connection may send, Burst how many at
	// once; 0 = 50 and 100.
	Rate  float64
	Burst int
	// MaxInFlight is the most unfinished requests per connection; 0 = 8.
	MaxInFlight int
	// MaxConns is the most connections served at once; 0 = 256.
	MaxConns int
	// WriteTimeout is how long a write to a client may block before it counts as hung and is
	// disconnected; 0 = 5s.
	WriteTimeout time.Duration
	// ModelName is the model id the OpenAI endpoint reports; "" = "laya".
	ModelName string
	// Logf reports connection-level problems; nil discards them.
	Logf func(format string, args ...any)
}

// Server answers completion requests on listeners given to Serve.
type Server struct {
	c   Completer
	opt Options

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[io.Closer]struct{}
	nextConn  uint64
	closed    bool
	wg        sync.WaitGroup
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("server: closed")

// New returns a server for c.
func New(c Completer, opt Options) *Server {
	if opt.MaxRequestBytes <= 0 {
		opt.MaxRequestBytes = 1 << 20
	}
	if opt.Rate <= 0 {
		opt.Rate = 50
	}
	if opt.Burst <= 0 {
		opt.Burst = 100
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 8
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = 256
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = 5 * time.Second
	}
	if opt.ModelName == "" {
		opt.ModelName = "laya"
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	return &Server{c: c, opt: opt, listeners: map[net.Listener]struct{}{}, conns: map[io.Closer]struct{}{}}
}

// Listen creates the Unix socket at path for Serve: its directory is made private (0700) if
// missing, the socket is 0600, and a socket left behind by a server that is gone is replaced.
// It fails when a live server already answers there.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("server: %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("server: %s: another server is running", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("server: removing stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// The directory is private already; this also keeps the socket private if it is not.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	return l, nil
}

// Serve accepts protocol connections on l until Close, which makes it return ErrClosed.
// Connections on a Unix socket from another user are refused.
func (s *Server) Serve(l net.Listener) error {
	return s.serve(l, func(nc net.Conn, id uint64) { s.serveConn(nc, id) })
}

func (s *Server) serve(l net.Listener, handle func(net.Conn, uint64)) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if !closed && !errors.Is(err, net.ErrClosed) {
				// Out of file descriptors and the like: wait for connections to finish.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.opt.Logf("server: accept: %v; retrying in %v", err, backoff)
				time.Sleep(backoff)
				continue
			}
			s.mu.Lock()
			delete(s.listeners, l)
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		backoff = 0
		if uc, ok := nc.(*net.UnixConn); ok {
			if uid, err := peerUID(uc); err != nil || uid != os.Getuid() {
				s.opt.Logf("server: refused a connection from uid %d (%v)", uid, err)
				nc.Close()
				continue
			}
		}
		s.mu.Lock()
		if s.closed || len(s.conns) >= s.opt.MaxConns {
			s.mu.Unlock()
			writeFrameNow(nc, Frame{Done: true, Error: "too many connections"}, s.opt.WriteTimeout)
			nc.Close()
			continue
		}
		s.nextConn++
		id := s.nextConn
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			handle(nc, id)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// Close stops the listeners, disconnects every client (canceling their requests) and waits
// for the connection handlers to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func writeFrameNow(nc net.Conn, f Frame, timeout time.Duration) {
	b, _ := json.Marshal(f)
	nc.SetWriteDeadline(time.Now().Add(timeout))
	nc.Write(append(b, '\n'))
}

// outbox queues a connection's writes for one writer goroutine, so that a client that stops
// reading fills the queue and is dropped instead of stalling the model, which produces text
// while it holds the engine.
type outbox struct {
	nc      net.Conn
	timeout time.Duration
	ctx     context.Context // done once the connection is dropped
	kill    context.CancelCauseFunc
	q       chan []byte
	done    chan struct{}
	logf    func(format string, args ...any)
}

// outQueue is how many writes may wait for a slow client; more than any one suggestion has.
const outQueue = 1024

func newOutbox(nc net.Conn, timeout time.Duration, logf func(string, ...any)) *outbox {
	ctx, kill := context.WithCancelCause(context.Background())
	o := &outbox{nc: nc, timeout: timeout, ctx: ctx, kill: kill, q: make(chan []byte, outQueue), done: make(chan struct{}), logf: logf}
	go o.loop()
	return o
}

func (o *outbox) loop() {
	defer close(o.done)
	w := bufio.NewWriterSize(o.nc, 32<<10)
	failed := false
	for b := range o.q {
		if failed {
			continue // drain so senders never block
		}
		o.nc.SetWriteDeadline(time.Now().Add(o.timeout))
		_, err := w.Write(b)
		if err == nil && len(o.q) == 0 {
			err = w.Flush()
		}
		if err != nil {
			failed = true
			o.logf("server: write: %v", err)
			o.drop(err)
		}
	}
}

// put queues b; a client too slow to take its writes is dropped.
func (o *outbox) put(b []byte) {
	select {
	case <-o.ctx.Done():
	case o.q <- b:
	default:
		o.drop(errors.New("client not reading"))
	}
}

// drop cancels everything the connection runs and closes it, which also unblocks its reader.
func (o *outbox) drop(err error) {
	o.kill(err)
	o.nc.Close()
}

// finish writes what is queued and stops the writer; no put may follow.
func (o *outbox) finish() {
	close(o.q)
	<-o.done
	o.kill(nil)
}

// conn is one protocol connection.
type conn struct {
	s      *Server
	client string // session key for requests that name no client
	out    *outbox
	reqs   sync.WaitGroup
	bucket bucket

	mu       sync.Mutex
	inflight map[string]context.CancelFunc
}

func (s *Server) serveConn(nc net.Conn, id uint64) {
	c := &conn{
		s: s, client: "conn:" + strconv.FormatUint(id, 10),
		out:      newOutbox(nc, s.opt.WriteTimeout, s.opt.Logf),
		bucket:   newBucket(s.opt),
		inflight: map[string]context.CancelFunc{},
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		line, tooBig, err := readLine(r, s.opt.MaxRequestBytes)
		if tooBig {
			c.send(Frame{Done: true, Error: fmt.Sprintf("request larger than %d bytes", s.opt.MaxRequestBytes)})
		} else if len(bytes.TrimSpace(line)) > 0 {
			c.handle(line)
		}
		if err == io.EOF {
			break // the client is done sending: answer what is in flight, then hang up
		}
		if err != nil {
			c.out.drop(err) // closed by Close, or the connection broke: stop its requests
			break
		}
	}
	c.reqs.Wait()
	c.out.finish()
	nc.Close()
}

// readLine reads one line of at most max bytes (without its newline). A longer line is
// consumed and reported as tooBig.
func readLine(r *bufio.Reader, max int) (line []byte, tooBig bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if !tooBig {
			if len(line)+len(frag) > max+1 {
				tooBig, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if err != bufio.ErrBufferFull {
			if tooBig {
				return nil, true, err
			}
			return bytes.TrimRight(line, "\r\n"), false, err
		}
	}
}

// send queues f for the client.
func (c *conn) send(f Frame) {
	b, err := json.Marshal(f)
	if err != nil {
		b, _ = json.Marshal(Frame{ID: f.ID, Done: true, Error: "server: encoding frame: " + err.Error()})
	}
	c.out.put(append(b, '\n'))
}

// Bounds on request fields that cost work per generated token or memory per session.
const (
	maxName  = 256
	maxStops = 16
)

// fieldsError says how a request's client (session key), app and stop strings exceed those
// bounds, or is "" when they do not. Both endpoints apply it.
func fieldsError(client, app string, stop []string) string {
	switch {
	case len(client) > maxName, len(app) > maxName, len(stop) > maxStops:
		return fmt.Sprintf("client and app are limited to %d bytes, stop to %d strings", maxName, maxStops)
	case slices.ContainsFunc(stop, func(s string) bool { return len(s) > maxName }):
		return fmt.Sprintf("stop strings are limited to %d bytes", maxName)
	}
	return ""
}

func (c *conn) handle(line []byte) {
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		var idOnly struct{ ID json.RawMessage }
		json.Unmarshal(line, &idOnly)
		f := Frame{Done: true, Error: "malformed request: " + err.Error()}
		if validID(idOnly.ID) {
			f.ID = idOnly.ID
		}
		c.send(f)
		return
	}
	if len(r.Cancel) > 0 {
		c.mu.Lock()
		if cancel := c.inflight[string(r.Cancel)]; cancel != nil {
			cancel()
		}
		c.mu.Unlock()
		return
	}
	if !validID(r.ID) {
		c.send(Frame{Done: true, Error: `request needs an "id" (a string or number)`})
		return
	}
	fail := func(msg string) { c.send(Frame{ID: r.ID, Done: true, Error: msg}) }
	switch {
	case r.MaxTokens < 0:
		fail("max_tokens must not be negative")
		return
	case r.Temperature < 0, r.TopK < 0, r.TopP < 0 || r.TopP > 1:
		fail("temperature, top_k and top_p must be in range")
		return
	case fieldsError(r.Client, r.App, r.Stop) != "":
		fail(fieldsError(r.Client, r.App, r.Stop))
		return
	case !c.bucket.take(time.Now()):
		fail("rate limit exceeded")
		return
	}
	key := string(r.ID)
	ctx, cancel := context.WithCancel(c.out.ctx)
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		fail("an unfinished request has this id")
		return
	}
	if len(c.inflight) >= c.s.opt.MaxInFlight {
		c.mu.Unlock()
		cancel()
		fail("too many requests in flight")
		return
	}
	c.inflight[key] = cancel
	c.mu.Unlock()

	client := c.client
	if r.Client != "" {
		client = "client:" + r.Client
	}
	req := complete.Request{
		Prefix: r.Prefix, Suffix: r.Suffix, App: r.App, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP, Stop: r.Stop,
	}
	c.reqs.Add(1)
	go func() {
		defer c.reqs.Done()
		sug, err := c.s.c.Complete(ctx, client, req, func(text string) {
			c.send(Frame{ID: r.ID, Text: text})
		})
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		cancel()
		f := Frame{ID: r.ID, Done: true}
		switch {
		case err == nil:
			f.Text, f.Tokens, f.Prompt, f.Reused = sug.Text, sug.Tokens, sug.Prompt, sug.Reused
			f.LatencyMS = float64(sug.Latency.Microseconds()) / 1000
			f.Logprob, f.Stop = sug.Logprob, sug.Stop
		case errors.Is(err, context.Canceled), errors.Is(err, complete.ErrSuperseded):
			f.Canceled, f.Stop = true, "canceled"
		default:
			f.Error = err.Error()
		}
		c.send(f)
	}()
}

// bucket is a token-bucket rate limiter.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newBucket(opt Options) bucket {
	return bucket{rate: opt.Rate, burst: float64(opt.Burst), tokens: float64(opt.Burst), last: time.Now()}
}

func (b *bucket) take(now time.Time) bool {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
