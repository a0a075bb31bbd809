package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layaapp/laya/complete"
)

// echo is a fake Completer: it suggests "<" + prefix + ">", one rune per piece, after delay
// per piece, and stops at the next piece once its context is done.
type echo struct {
	delay  time.Duration
	mu     sync.Mutex
	calls  []call
	pieces atomic.Int64 // pieces produced, for cancellation checks
}

type call struct {
	client string
	req    complete.Request
}

func (e *echo) Complete(ctx context.Context, client string, req complete.Request, onText func(string)) (complete.Suggestion, error) {
	e.mu.Lock()
	e.calls = append(e.calls, call{client, req})
	e.mu.Unlock()
	if req.Prefix == "fail" {
		return complete.Suggestion{}, errors.New("fake failure")
	}
	text := "<" + req.Prefix + ">"
	for _, r := range text {
		if err := ctx.Err(); err != nil {
			return complete.Suggestion{Stop: "canceled"}, err
		}
		if e.delay > 0 {
			time.Sleep(e.delay)
		}
		e.pieces.Add(1)
		if onText != nil {
			onText(string(r))
		}
	}
	return complete.Suggestion{Text: text, Tokens: len(text), Prompt: 3, Reused: 1, Stop: "eos", Latency: time.Millisecond}, nil
}

func startServer(t *testing.T, c Completer, opt Options) (*Server, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s", "laya.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(c, opt)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return s, path
}

func dial(t *testing.T, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a protocol connection driven by hand.
type raw struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Scanner
}

func dialRaw(t *testing.T, path string) *raw {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	s := bufio.NewScanner(nc)
	s.Buffer(nil, 1<<20)
	return &raw{t, nc, s}
}

func (r *raw) send(line string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(line)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw) frame() Frame {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if !r.r.Scan() {
		r.t.Fatalf("no frame: %v", r.r.Err())
	}
	var f Frame
	if err := json.Unmarshal(r.r.Bytes(), &f); err != nil {
		r.t.Fatalf("frame %q: %v", r.r.Bytes(), err)
	}
	return f
}

// final reads frames up to the final one, returning it and the streamed text.
func (r *raw) final() (Frame, string) {
	r.t.Helper()
	var b strings.Builder
	for {
		f := r.frame()
		if f.Done {
			return f, b.String()
		}
		b.WriteString(f.Text)
	}
}

func TestRoundTrip(t *testing.T) {
	e := &echo{}
	_, path := startServer(t, e, Options{})
	c := dial(t, path)
	var streamed strings.Builder
	f, err := c.Complete(context.Background(), Request{
		Prefix: "héllo", Suffix: "after", Client: "field-1", App: "mail", MaxTokens: 7,
		Temperature: 0.5, TopK: 3, TopP: 0.9, Stop: []string{"."},
	}, func(s string) { streamed.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if f.Text != "<héllo>" || streamed.String() != f.Text || !f.Done || f.Stop != "eos" || f.Tokens != len("<héllo>") {
		t.Errorf("final %+v, streamed %q", f, streamed.String())
	}
	want := call{"client:field-1", complete.Request{Prefix: "héllo", Suffix: "after", App: "mail", MaxTokens: 7,
		Temperature: 0.5, TopK: 3, TopP: 0.9, Stop: []string{"."}}}
	if got := e.calls[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("completer got %+v, want %+v", got, want)
	}
	// Without a client name the connection is the session.
	if _, err := c.Complete(context.Background(), Request{Prefix: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.calls[1].client; !strings.HasPrefix(got, "conn:") {
		t.Errorf("session key %q, want the connection's", got)
	}
	if _, err := c.Complete(context.Background(), Request{Prefix: "fail"}, nil); err == nil || !strings.Contains(err.Error(), "fake failure") {
		t.Errorf("completer error came back as %v", err)
	}
}

func TestMalformedAndOversized(t *testing.T) {
	_, path := startServer(t, &echo{}, Options{MaxRequestBytes: 1000})
	r := dialRaw(t, path)
	cases := []struct {
		line, id, err string
	}{
		{"not json\n", "", "malformed request"},
		{`{"prefix":"a"}` + "\n", "", `needs an "id"`},
		{`{"id":{"x":1},"prefix":"a"}` + "\n", "", `needs an "id"`},
		{`{"id":"","prefix":"a"}` + "\n", "", `needs an "id"`},
		{`{"id":7,"prefix":"a","max_tokens":-1}` + "\n", "7", "max_tokens"},
		{`{"id":"t","prefix":"a","temperature":"hot"}` + "\n", `"t"`, "malformed request"},
		{`{"id":"p","prefix":"a","top_p":1.5}` + "\n", `"p"`, "top_p must be between 0 and 1"},
		{`{"id":"k","prefix":"a","top_k":-1}` + "\n", `"k"`, "top_k"},
		{`{"id":"a","prefix":"a","app":"` + strings.Repeat("x", 300) + `"}` + "\n", `"a"`, "app is limited to 256 bytes"},
		{`{"id":"s","prefix":"a","stop":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}` + "\n", `"s"`, "16 strings"},
		{`{"id":"l","prefix":"a","stop":["` + strings.Repeat("x", 300) + `"]}` + "\n", `"l"`, "limited to 256 bytes"},
		{`{"id":"c","prefix":"a","client":"` + strings.Repeat("x", 300) + `"}` + "\n", `"c"`, "client is limited to 256 bytes"},
		{`{"id":"big","prefix":"` + strings.Repeat("x", 2000) + `"}` + "\n", "", "larger than 1000 bytes"},
		{`{"id":"big2","prefix":"` + strings.Repeat("x", 200000) + `"}` + "\n", "", "larger than 1000 bytes"},
	}
	for _, tc := range cases {
		r.send(tc.line)
		f := r.frame()
		if !f.Done || !strings.Contains(f.Error, tc.err) || string(f.ID) != tc.id {
			t.Errorf("%.40q: got %+v, want error %q with id %s", tc.line, f, tc.err, tc.id)
		}
	}
	// The connection still works, with CRLF line ends and numeric ids echoed as sent.
	r.send(`{"id":42,"prefix":"ok"}` + "\r\n")
	f, streamed := r.final()
	if string(f.ID) != "42" || f.Text != "<ok>" || streamed != "<ok>" || f.Error != "" {
		t.Errorf("after bad input: %+v (streamed %q)", f, streamed)
	}
	// A cancel for an unknown id is ignored.
	r.send(`{"cancel":"nope"}` + "\n" + `{"id":"z","prefix":"z"}` + "\n")
	if f, _ := r.final(); f.Text != "<z>" {
		t.Errorf("after unknown cancel: %+v", f)
	}
}

func TestCancel(t *testing.T) {
	e := &echo{delay: 5 * time.Millisecond}
	_, path := startServer(t, e, Options{})
	r := dialRaw(t, path)
	r.send(`{"id":"slow","prefix":"` + strings.Repeat("a", 300) + `"}` + "\n")
	if f := r.frame(); f.Done || f.Text != "<" {
		t.Fatalf("first frame %+v", f)
	}
	r.send(`{"cancel":"slow"}` + "\n")
	sentAt := e.pieces.Load()
	f, _ := r.final()
	if !f.Canceled || f.Error != "" || f.Text != "" {
		t.Fatalf("final after cancel: %+v", f)
	}
	// The cancel travels while a piece or two is produced; the rest of the 302 never are.
	if extra := e.pieces.Load() - sentAt; extra > 2 {
		t.Errorf("%d pieces produced after the cancel was sent, want at most 2", extra)
	}

	// Through the Client: canceling the context cancels on the server.
	c := dial(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	before := e.pieces.Load()
	_, err := c.Complete(ctx, Request{Prefix: strings.Repeat("b", 300)}, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete returned %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := e.pieces.Load() - before; n > 3 {
		t.Errorf("%d pieces produced for a request canceled after the first", n)
	}
}

func TestManyClients(t *testing.T) {
	const clients, requests = 50, 200
	_, path := startServer(t, &echo{}, Options{})
	var wg sync.WaitGroup
	var bad atomic.Int64
	for i := range clients {
		c := dial(t, path)
		// Two goroutines share each connection, so frames of concurrent requests interleave.
		for half := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := half; j < requests; j += 2 {
					prefix := fmt.Sprintf("%d/%d", i, j)
					var streamed strings.Builder
					f, err := c.Complete(context.Background(), Request{Prefix: prefix}, func(s string) { streamed.WriteString(s) })
					if err != nil || f.Text != "<"+prefix+">" || streamed.String() != f.Text {
						if bad.Add(1) < 5 {
							t.Errorf("client %d request %d: %+v %q %v", i, j, f, streamed.String(), err)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of %d responses lost or crossed", n, clients*requests)
	}
}

func TestLimits(t *testing.T) {
	e := &echo{delay: 20 * time.Millisecond}
	_, path := startServer(t, e, Options{MaxInFlight: 1})
	r := dialRaw(t, path)
	r.send(`{"id":1,"prefix":"aaaa"}` + "\n" + `{"id":2,"prefix":"b"}` + "\n" + `{"id":1,"prefix":"c"}` + "\n")
	errs := map[string]string{}
	for len(errs) < 2 {
		if f := r.frame(); f.Done {
			errs[string(f.ID)+"#"+fmt.Sprint(len(errs))] = f.Error
		}
	}
	for _, msg := range errs {
		if !strings.Contains(msg, "in flight") && !strings.Contains(msg, "has this id") {
			t.Errorf("second and third requests: %v, want in-flight errors", errs)
		}
	}
	if f, _ := r.final(); f.Text != "<aaaa>" {
		t.Errorf("first request: %+v", f)
	}
}

// Idle connections, however many, do not lock the owner out: at the limit the one idle the
// longest makes room, and connections that send nothing are closed after ReadTimeout.
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	const max = 8
	_, path := startServer(t, &echo{}, Options{MaxConns: max, ReadTimeout: 300 * time.Millisecond, IdleTimeout: time.Hour})
	var idle []net.Conn
	for range 3 * max {
		nc, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		idle = append(idle, nc)
	}
	t0 := time.Now()
	c := dial(t, path)
	if f, err := c.Complete(context.Background(), Request{Prefix: "owner"}, nil); err != nil || f.Text != "<owner>" {
		t.Fatalf("the owner's request with %d idle connections open: %+v %v", len(idle), f, err)
	}
	if d := time.Since(t0); d > 250*time.Millisecond {
		t.Errorf("the owner waited %v for idle connections to time out", d)
	}
	// The idle ones that were not closed to make room are closed after ReadTimeout.
	buf := make([]byte, 1)
	for i, nc := range idle {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle connection %d: read %v, want it closed by the server", i, err)
		}
	}
}

// With every connection busy, one over the limit gets the server's error, not a reset.
func TestOverLimitGetsError(t *testing.T) {
	e := &echo{delay: 50 * time.Millisecond}
	_, path := startServer(t, e, Options{MaxConns: 2})
	for i := range 2 {
		r := dialRaw(t, path)
		r.send(fmt.Sprintf(`{"id":%d,"prefix":"%s"}`+"\n", i, strings.Repeat("x", 100)))
		r.frame() // streaming: the request is in flight
	}
	r := dialRaw(t, path)
	if f := r.frame(); !f.Done || !strings.Contains(f.Error, "too many connections") {
		t.Errorf("over the limit: %+v, want a final frame saying too many connections", f)
	}
	// The client passes the server's words on.
	c := dial(t, path)
	if _, err := c.Complete(context.Background(), Request{Prefix: "x"}, nil); err == nil || !strings.Contains(err.Error(), "too many connections") {
		t.Errorf("Client over the limit: %v", err)
	}
}

// A connection that has sent requests stays open while they run, however long, and closes
// after IdleTimeout once they are done.
func TestIdleTimeoutWaitsForRequests(t *testing.T) {
	e := &echo{delay: 40 * time.Millisecond}
	_, path := startServer(t, e, Options{ReadTimeout: 100 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	r := dialRaw(t, path)
	r.send(`{"id":1,"prefix":"abcdefghij"}` + "\n") // 12 pieces of 40 ms: longer than both timeouts
	if f, _ := r.final(); f.Text != "<abcdefghij>" {
		t.Fatalf("long request: %+v", f)
	}
	t0 := time.Now()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if r.r.Scan() {
		t.Fatalf("unexpected frame %q", r.r.Bytes())
	}
	if d := time.Since(t0); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("closed %v after the last answer, want about IdleTimeout (200ms)", d)
	}
}

func TestHungClientDoesNotBlockOthers(t *testing.T) {
	e := &echo{}
	_, path := startServer(t, e, Options{WriteTimeout: 200 * time.Millisecond})
	hung := dialRaw(t, path)
	// Hundreds of thousands of pieces the client never reads.
	hung.send(`{"id":"h","prefix":"` + strings.Repeat("x", 400000) + `"}` + "\n")
	time.Sleep(50 * time.Millisecond)
	c := dial(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if f, err := c.Complete(ctx, Request{Prefix: "live"}, nil); err != nil || f.Text != "<live>" {
		t.Fatalf("other client: %+v %v", f, err)
	}
	// The hung client's request is dropped, not run to the end.
	deadline := time.Now().Add(5 * time.Second)
	for e.pieces.Load() < 400002 && time.Now().Before(deadline) {
		e.mu.Lock()
		n := len(e.calls)
		e.mu.Unlock()
		if n == 2 && !stillRunning(e) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e.pieces.Load() >= 400002 {
		t.Error("the hung client's request ran to completion")
	}
}

// stillRunning reports whether the fake is still producing pieces.
func stillRunning(e *echo) bool {
	a := e.pieces.Load()
	time.Sleep(20 * time.Millisecond)
	return e.pieces.Load() != a
}

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	path := filepath.Join(dir, "laya.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("second Listen on a live socket: %v", err)
	}
	// A crashed server leaves its socket file; the next one replaces it.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	l2, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
	plain := filepath.Join(dir, "file")
	os.WriteFile(plain, nil, 0o600)
	if _, err := Listen(plain); err == nil {
		t.Error("Listen replaced a regular file")
	}
}

func TestPeerUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := net.Dial("unix", path); err == nil {
			time.Sleep(100 * time.Millisecond)
			c.Close()
		}
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if uid, err := peerUID(c.(*net.UnixConn)); err != nil || uid != os.Getuid() {
		t.Errorf("peerUID = %d, %v; want %d", uid, err, os.Getuid())
	}
}

func TestCloseCancelsRequests(t *testing.T) {
	e := &echo{delay: 5 * time.Millisecond}
	path := filepath.Join(t.TempDir(), "c.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(e, Options{})
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	c := dial(t, path)
	errc := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := c.Complete(context.Background(), Request{Prefix: strings.Repeat("x", 1000)}, func(string) { once.Do(func() { close(started) }) })
		errc <- err
	}()
	<-started
	t0 := time.Now()
	s.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("request survived Close")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket file left after Close: %v", err)
	}
}

// A client that hangs up mid-answer is how clients normally end: nothing is logged.
func TestHangUpNotLogged(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	e := &echo{delay: time.Millisecond}
	_, path := startServer(t, e, Options{Logf: func(format string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(format, a...))
		mu.Unlock()
	}})
	for range 5 {
		r := dialRaw(t, path)
		r.send(`{"id":1,"prefix":"` + strings.Repeat("x", 300) + `"}` + "\n")
		r.frame()
		r.nc.Close()
	}
	time.Sleep(600 * time.Millisecond) // the rest of the answers meet closed connections
	mu.Lock()
	defer mu.Unlock()
	if len(logs) > 0 {
		t.Errorf("logged %q", logs)
	}
}
