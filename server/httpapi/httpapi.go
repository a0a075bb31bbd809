// Package httpapi serves the completion engine over HTTP on a loopback TCP port, in the
// protocols editor plugins already speak to local model servers:
//
//   - OpenAI: POST /v1/completions (streaming with "stream": true) and GET /v1/models;
//   - llama.cpp server: POST /infill (input_prefix, input_suffix, input_extra, prompt, n_predict,
//     stream), what llama.vscode and llama.vim send;
//   - Ollama: POST /api/generate with "suffix" (streaming by default), GET /api/tags and
//     POST /api/show, what Continue and Twinny send for autocompletion.
//
// A TCP port cannot tell which local user connects, so every route requires the API key as
// "Authorization: Bearer KEY" unless the server runs without one; requests a web page could
// send (an Origin header, or a Host that is not loopback) are refused. Requests and answers are
// mapped through server.Request.Completion and server.Final, as on the socket.
package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/server"
)

// Options configures a Server. Zero values select the defaults.
type Options struct {
	// Key is the API key every request must carry as a bearer token; "" serves without one.
	Key string
	// ModelName is the model id the endpoints report; "" = "laya". ContextLength is the
	// positions of a session, reported where a protocol asks (Ollama's /api/show).
	ModelName     string
	ContextLength int
	// MaxConns is the most connections served at once; 0 = 64. At the limit the connection
	// idle the longest is closed to admit a new one; when none is idle the new one is answered
	// 503 and closed.
	MaxConns int
	// MaxRequestBytes bounds a request body; 0 = 1 MiB.
	MaxRequestBytes int64
	// Rate is the completion requests per second the endpoint accepts, Burst how many at once;
	// 0 = 50 and 100. Beyond it requests get 429.
	Rate  float64
	Burst int
	// ReadTimeout is how long a client may take to send a request's header and body, and a new
	// connection its first request; 0 = 5s. IdleTimeout closes a keep-alive connection that
	// sends nothing; 0 = 60s. WriteTimeout bounds each write of an answer; 0 = 5s.
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// Logf reports connection-level problems; nil discards them.
	Logf func(format string, args ...any)
}

// Server answers HTTP completion requests.
type Server struct {
	c    server.Completer
	opt  Options
	lim  *rate.Limiter
	srv  *http.Server
	conn connLimit
	// refusing bounds the connections being answered 503 at once.
	refusing chan struct{}
}

// ErrNotLoopback is returned by Serve for a listener other machines could reach.
var ErrNotLoopback = errors.New("httpapi: the HTTP endpoint must listen on a loopback TCP address")

// New returns a server for c.
func New(c server.Completer, opt Options) *Server {
	if opt.ModelName == "" {
		opt.ModelName = "laya"
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = 64
	}
	if opt.MaxRequestBytes <= 0 {
		opt.MaxRequestBytes = 1 << 20
	}
	if opt.Rate <= 0 {
		opt.Rate = 50
	}
	if opt.Burst <= 0 {
		opt.Burst = 100
	}
	for v, d := range map[*time.Duration]time.Duration{&opt.ReadTimeout: 5 * time.Second, &opt.IdleTimeout: 60 * time.Second, &opt.WriteTimeout: 5 * time.Second} {
		if *v <= 0 {
			*v = d
		}
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	s := &Server{c: c, opt: opt, lim: rate.NewLimiter(rate.Limit(opt.Rate), opt.Burst), refusing: make(chan struct{}, 16)}
	s.conn = connLimit{max: opt.MaxConns, conns: map[net.Conn]*connInfo{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.openAIModels)
	mux.HandleFunc("POST /v1/completions", s.openAICompletions)
	mux.HandleFunc("POST /infill", s.infill)
	mux.HandleFunc("POST /api/generate", s.ollamaGenerate)
	mux.HandleFunc("GET /api/tags", s.ollamaTags)
	mux.HandleFunc("POST /api/show", s.ollamaShow)
	s.srv = &http.Server{
		Handler:           s.guard(mux),
		ReadHeaderTimeout: opt.ReadTimeout,
		ReadTimeout:       opt.ReadTimeout,
		IdleTimeout:       opt.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         s.conn.state,
		ErrorLog:          log.New(logWriter(opt.Logf), "", 0),
	}
	return s
}

// Serve answers requests on l until Close, which makes it return server.ErrClosed. l must
// listen on a loopback address.
func (s *Server) Serve(l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		l.Close()
		return fmt.Errorf("%w, not %s", ErrNotLoopback, l.Addr())
	}
	err := s.srv.Serve(&limitListener{Listener: l, s: s})
	if errors.Is(err, http.ErrServerClosed) {
		return server.ErrClosed
	}
	return err
}

// Close stops the listeners and disconnects every client, canceling their requests.
func (s *Server) Close() error {
	return s.srv.Close()
}

// logWriter passes net/http's own log lines to Logf.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// guard refuses what a web page could send and requests without the key, and bounds bodies.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !loopbackHost(r.Host):
			s.fail(w, r, http.StatusForbidden, "Host must be a loopback address")
			return
		case r.Header.Get("Origin") != "":
			s.fail(w, r, http.StatusForbidden, "requests from web pages are not served")
			return
		case s.opt.Key != "" && !s.keyOK(r):
			w.Header().Set("WWW-Authenticate", "Bearer")
			s.fail(w, r, http.StatusUnauthorized, "missing or wrong API key: send it as \"Authorization: Bearer KEY\" (laya serve prints where it is stored)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opt.MaxRequestBytes)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) keyOK(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.opt.Key)) == 1
}

// loopbackHost reports whether a Host header names this machine's loopback interface.
func loopbackHost(h string) bool {
	host := h
	if hh, _, err := net.SplitHostPort(h); err == nil {
		host = hh
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// fail answers an error in the shape of the route's protocol: {"error": "…"} for Ollama's,
// {"error": {"message": "…", …}} for OpenAI's and llama.cpp's.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var body any
	if strings.HasPrefix(r.URL.Path, "/api/") {
		body = map[string]any{"error": msg}
	} else {
		typ := "invalid_request_error"
		switch status {
		case http.StatusUnauthorized:
			typ = "authentication_error"
		case http.StatusServiceUnavailable, http.StatusInternalServerError:
			typ = "server_error"
		}
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "type": typ}}
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// decode reads a JSON request body into v, answering the error itself when it fails.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", tooBig.Limit))
		} else {
			s.fail(w, r, http.StatusBadRequest, "malformed JSON: "+err.Error())
		}
		return false
	}
	return true
}

// session is the session key of an HTTP request: one per protocol and name (an OpenAI user,
// a llama.cpp slot, an Ollama model). Not one per connection: editor plugins cancel a request
// by closing its connection and send the next on a new one, and the next must find the cache
// (and cancel the request it replaces), as on llama.cpp's and Ollama's own servers.
func session(kind, name string) string {
	if name == "" {
		return kind
	}
	return kind + ":" + name
}

// run completes req for client, sending each piece to onPiece from the handler's goroutine
// (never the engine's, so a slow client cannot stall the model) with the write deadline
// renewed, and returns the final frame with its HTTP status. A client too slow to take its
// pieces is dropped.
func (s *Server) run(w http.ResponseWriter, r *http.Request, client string, req complete.Request, onPiece func(string) error) (server.Frame, int) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	rc := http.NewResponseController(w)
	pieces := make(chan string, 1024)
	type result struct {
		sug complete.Suggestion
		err error
	}
	done := make(chan result, 1)
	go func() {
		var onText func(string)
		if onPiece != nil {
			onText = func(t string) {
				select {
				case pieces <- t:
				default:
					cancel(errors.New("client not reading"))
				}
			}
		}
		sug, err := s.c.Complete(ctx, client, req, onText)
		close(pieces)
		done <- result{sug, err}
	}()
	failed := false
	for p := range pieces {
		if failed {
			continue
		}
		rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
		err := onPiece(p)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			failed = true
			cancel(err)
		}
	}
	res := <-done
	rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
	f := server.Final(nil, res.sug, res.err)
	switch {
	case res.err == nil:
		return f, http.StatusOK
	case f.Canceled:
		return f, 499 // the client went away, or a newer request of its session came
	case errors.Is(res.err, complete.ErrBusy), errors.Is(res.err, complete.ErrClosed):
		return f, http.StatusServiceUnavailable
	}
	return f, http.StatusInternalServerError
}

// failure is the error message of a final frame that did not complete.
func failure(f server.Frame) string {
	if f.Canceled {
		return "canceled"
	}
	return f.Error
}

// request checks a completion request's fields (named under field, the protocol's place for
// them) and the endpoint's rate limit, answering the error itself when either refuses it.
func (s *Server) request(w http.ResponseWriter, r *http.Request, sr server.Request, field string) (complete.Request, bool) {
	req, err := sr.Completion()
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, field+err.Error())
		return req, false
	}
	if !s.lim.Allow() {
		s.fail(w, r, http.StatusTooManyRequests, "rate limit exceeded")
		return req, false
	}
	return req, true
}

// connLimit bounds the open connections, making room by closing the one idle the longest.
type connLimit struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	idle  bool // no request being served: new, or kept alive between requests
	since time.Time
}

// admit registers c, or reports false when every open connection is serving a request.
func (l *connLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var oldest net.Conn
		var since time.Time
		for oc, info := range l.conns {
			if info.idle && (oldest == nil || info.since.Before(since)) {
				oldest, since = oc, info.since
			}
		}
		if oldest == nil {
			return false
		}
		delete(l.conns, oldest)
		oldest.Close()
	}
	l.conns[c] = &connInfo{idle: true, since: time.Now()}
	return true
}

// state follows net/http's view of each connection.
func (l *connLimit) state(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	info := l.conns[c]
	if info == nil {
		return // closed to make room
	}
	switch st {
	case http.StateActive:
		info.idle = false
	case http.StateIdle:
		info.idle, info.since = true, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// limitListener admits connections through the server's connLimit and answers the ones over
// it with 503.
type limitListener struct {
	net.Listener
	s *Server
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.conn.admit(c) {
			return c, nil
		}
		select {
		case l.s.refusing <- struct{}{}:
			go func() {
				refuse(c, l.s.opt.MaxConns)
				<-l.s.refusing
			}()
		default:
			c.Close() // a flood: no answer for every one
		}
	}
}

// refuse answers a connection over the limit with 503 and closes it. It reads what the client
// sent first, for a while, so that closing does not reset the connection before the client
// reads the answer.
func refuse(c net.Conn, max int) {
	defer c.Close()
	body := fmt.Sprintf(`{"error":{"code":503,"message":"too many connections (%d) with requests in flight; try again","type":"server_error"}}`, max)
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}
