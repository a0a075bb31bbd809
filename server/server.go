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
	"strconv"
	"sync"
	"syscall"
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
	// MaxInFlight is the most unfinished requests per connection; 0 = 8.
	MaxInFlight int
	// MaxConns is the most connections served at once; 0 = 256. At the limit, the connection
	// idle the longest (nothing in flight) is closed to admit a new one; when none is idle the
	// new one is answered with an error frame and closed.
	MaxConns int
	// ReadTimeout is how long a new connection may take to send its first request, and any
	// connection to finish a line it has begun; 0 = 5s.
	ReadTimeout time.Duration
	// IdleTimeout is how long a connection that has sent requests may wait with nothing in
	// flight before it is closed; 0 = 60s. Clients reconnect when they need to.
	IdleTimeout time.Duration
	// WriteTimeout is how long a write to a client may block before it counts as hung and is
	// disconnected; 0 = 5s.
	WriteTimeout time.Duration
	// Logf reports connection-level problems; nil discards them.
	Logf func(format string, args ...any)
}

// Server answers completion requests on listeners given to Serve.
type Server struct {
	c   Completer
	opt Options

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	live      int // conns not yet told to close
	nextConn  uint64
	closed    bool
	wg        sync.WaitGroup
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("server: closed")

// New returns a server for c.
func New(c Completer, opt Options) *Server {
	orDefault(&opt.MaxRequestBytes, 1<<20)
	orDefault(&opt.MaxInFlight, 8)
	orDefault(&opt.MaxConns, 256)
	orDefault(&opt.ReadTimeout, 5*time.Second)
	orDefault(&opt.IdleTimeout, 60*time.Second)
	orDefault(&opt.WriteTimeout, 5*time.Second)
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	return &Server{c: c, opt: opt, listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
}

// orDefault sets an option left at zero (or below) to its default d.
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Listen creates the Unix socket at path for Serve: its directory is made private (0700) if
// missing, the socket is 0600, and a socket left behind by a server that is gone is replaced.
// It fails when a live server already answers there.
func Listen(path string) (net.Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
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
			if uid, err := peerUID(uc); err != nil {
				s.opt.Logf("server: refused a connection: %v", err)
				nc.Close()
				continue
			} else if uid != os.Getuid() {
				s.opt.Logf("server: refused a connection from uid %d", uid)
				nc.Close()
				continue
			}
		}
		c := s.admit(nc)
		if c == nil {
			writeFrameNow(nc, Frame{Done: true, Error: fmt.Sprintf("server: too many connections (%d) with requests in flight; try again", s.opt.MaxConns)}, s.opt.WriteTimeout)
			nc.Close()
			continue
		}
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			if !c.evicted {
				s.live--
			}
			s.mu.Unlock()
		}()
	}
}

// admit registers a connection, making room at the limit by closing the connection idle the
// longest, or returns nil when every connection has requests in flight.
func (s *Server) admit(nc net.Conn) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.live >= s.opt.MaxConns {
		var oldest *conn
		var since int64
		for c := range s.conns {
			if c.evicted {
				continue
			}
			if t, idle := c.idleSince(); idle && (oldest == nil || t < since) {
				oldest, since = c, t
			}
		}
		if oldest == nil {
			return nil
		}
		oldest.evicted = true
		s.live--
		oldest.nc.Close()
	}
	s.nextConn++
	c := newConn(s, nc, s.nextConn)
	s.conns[c] = struct{}{}
	s.live++
	s.wg.Add(1)
	return c
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
		c.nc.Close()
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
			if !hungUp(err) {
				o.logf("server: write: %v", err)
			}
			o.drop(err)
		}
	}
}

// hungUp reports whether a write failed because the client went away, which is how clients
// normally end, or because the connection was closed here.
func hungUp(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
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
	s       *Server
	nc      net.Conn
	client  string // session key for requests that name no client
	out     *outbox
	reqs    sync.WaitGroup
	evicted bool // closed to make room; guarded by s.mu

	mu       sync.Mutex
	inflight map[string]context.CancelFunc
	active   int64 // unix nanoseconds when the last request ended or the connection opened
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	return &conn{
		s: s, nc: nc, client: "conn:" + strconv.FormatUint(id, 10),
		out:      newOutbox(nc, s.opt.WriteTimeout, s.opt.Logf),
		inflight: map[string]context.CancelFunc{},
		active:   time.Now().UnixNano(),
	}
}

// idleSince reports since when c has had nothing in flight, and whether that is now.
func (c *conn) idleSince() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active, len(c.inflight) == 0
}

func (c *conn) serve() {
	s := c.s
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var partial []byte // a line begun before a read timed out with requests in flight
	requests := 0
	for {
		// A new connection or a begun line gets ReadTimeout; one between requests IdleTimeout
		// from when its last request ended, or from now while some are in flight.
		deadline := time.Now().Add(s.opt.ReadTimeout)
		between := requests > 0 && len(partial) == 0 && r.Buffered() == 0
		if between {
			since, idle := c.idleSince()
			deadline = time.Now().Add(s.opt.IdleTimeout)
			if idle {
				deadline = time.Unix(0, since).Add(s.opt.IdleTimeout)
			}
		}
		c.nc.SetReadDeadline(deadline)
		line, tooBig, err := readLine(r, s.opt.MaxRequestBytes, partial)
		partial = nil
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Waiting for answers is not idle, nor is a request that ended after the deadline
			// was set.
			since, idle := c.idleSince()
			if !idle || (between && len(line) == 0 && time.Since(time.Unix(0, since)) < s.opt.IdleTimeout) {
				partial = line
				continue
			}
			c.out.drop(err)
			break
		}
		if tooBig {
			c.send(Frame{Done: true, Error: fmt.Sprintf("request larger than %d bytes", s.opt.MaxRequestBytes)})
		} else if len(bytes.TrimSpace(line)) > 0 {
			requests++
			c.handle(line)
		}
		if err == io.EOF {
			break // the client is done sending: answer what is in flight, then hang up
		}
		if err != nil {
			c.out.drop(err) // closed by Close or to make room, or the connection broke
			break
		}
	}
	c.reqs.Wait()
	c.out.finish()
	c.nc.Close()
}

// readLine reads one line of at most max bytes (without its newline), continuing line, the
// start of it read before. A longer line is consumed and reported as tooBig.
func readLine(r *bufio.Reader, max int, line []byte) (_ []byte, tooBig bool, err error) {
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
	req, err := r.Completion()
	if err != nil {
		fail(err.Error())
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
	c.reqs.Add(1)
	go func() {
		defer c.reqs.Done()
		sug, err := c.s.c.Complete(ctx, client, req, func(text string) {
			c.send(Frame{ID: r.ID, Text: text})
		})
		c.mu.Lock()
		delete(c.inflight, key)
		c.active = time.Now().UnixNano()
		c.mu.Unlock()
		cancel()
		c.send(Final(r.ID, sug, err))
	}()
}
