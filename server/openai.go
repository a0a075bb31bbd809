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
	"strconv"
	"strings"
	"time"

	"github.com/layaapp/laya/complete"
)

// The OpenAI-compatible endpoint speaks just enough HTTP/1.1 for POST /v1/completions: our
// privacy rule keeps net/http out of everything but the model downloader, and a fixed tiny
// subset is easier to bound than a general server.

const (
	maxHeaderBytes = 16 << 10
	httpIdle       = 30 * time.Second // a keep-alive connection waiting for its next request
)

// ServeOpenAI answers OpenAI-style POST /v1/completions (streaming with "stream": true) and
// GET /v1/models on l until Close. l must listen on a loopback address. Unlike the socket, a
// TCP port cannot tell which user connects, so this is for users who opt in; requests that a
// web page could send (an Origin header, or a Host that is not loopback) are refused.
func (s *Server) ServeOpenAI(l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		l.Close()
		return fmt.Errorf("server: OpenAI endpoint must listen on a loopback TCP address, not %s", l.Addr())
	}
	return s.serve(l, s.serveHTTP)
}

// httpRequest is a parsed request head and body.
type httpRequest struct {
	method, target, proto string
	header                map[string]string // lower-case names
	body                  []byte
}

// httpError is a request the server answers with status and message, then hangs up.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

func (s *Server) serveHTTP(nc net.Conn, id uint64) {
	out := newOutbox(nc, s.opt.WriteTimeout, s.opt.Logf)
	defer func() {
		out.finish()
		nc.Close()
	}()
	br := bufio.NewReaderSize(nc, 16<<10)
	b := newBucket(s.opt)
	for {
		nc.SetReadDeadline(time.Now().Add(httpIdle))
		req, err := readHTTPRequest(br, s.opt.MaxRequestBytes, func() { out.put([]byte("HTTP/1.1 100 Continue\r\n\r\n")) })
		if err != nil {
			var he *httpError
			if errors.As(err, &he) {
				writeHTTPError(out, he.status, he.msg)
			}
			return
		}
		nc.SetReadDeadline(time.Time{})
		if !b.take(time.Now()) {
			writeHTTPError(out, 429, "rate limit exceeded")
			return
		}
		client := fmt.Sprintf("http:%d", id)
		if !s.handleHTTP(out, req, client) || strings.EqualFold(req.header["connection"], "close") || req.proto == "HTTP/1.0" {
			return
		}
	}
}

// readHTTPRequest reads one request, calling proceed when the client waits for a 100 Continue.
func readHTTPRequest(br *bufio.Reader, maxBody int, proceed func()) (*httpRequest, error) {
	total := 0
	next := func() (string, error) {
		line, tooBig, err := readLine(br, maxHeaderBytes-total)
		if tooBig {
			return "", &httpError{431, "request header too large"}
		}
		if err != nil {
			return "", err // includes a connection closed between requests
		}
		total += len(line) + 2
		return string(line), nil
	}
	first, err := next()
	if err != nil {
		return nil, err
	}
	parts := strings.Split(first, " ")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || !strings.HasPrefix(parts[2], "HTTP/1.") {
		return nil, &httpError{400, "malformed request line"}
	}
	r := &httpRequest{method: parts[0], target: parts[1], proto: parts[2], header: map[string]string{}}
	for {
		line, err := next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, &httpError{400, "truncated request header"}
			}
			return nil, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, &httpError{400, "malformed header line"}
		}
		name = strings.ToLower(name)
		if _, dup := r.header[name]; dup && name == "content-length" {
			return nil, &httpError{400, "repeated Content-Length"}
		}
		r.header[name] = strings.TrimSpace(value)
	}
	if _, ok := r.header["transfer-encoding"]; ok {
		return nil, &httpError{501, "chunked request bodies are not supported; send Content-Length"}
	}
	n := 0
	if cl, ok := r.header["content-length"]; ok {
		n, err = strconv.Atoi(cl)
		if err != nil || cl == "" || strings.Trim(cl, "0123456789") != "" {
			return nil, &httpError{400, "bad Content-Length"}
		}
		if n > maxBody {
			return nil, &httpError{413, fmt.Sprintf("body larger than %d bytes", maxBody)}
		}
	} else if r.method == "POST" {
		return nil, &httpError{411, "Content-Length required"}
	}
	if strings.EqualFold(r.header["expect"], "100-continue") && n > 0 {
		proceed()
	}
	r.body = make([]byte, n)
	if _, err := io.ReadFull(br, r.body); err != nil {
		return nil, &httpError{400, "truncated body"}
	}
	return r, nil
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

func writeHTTP(out *outbox, status int, ctype string, body []byte, keep bool) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n", status, statusText(status), ctype, len(body))
	if !keep {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	out.put(b.Bytes())
}

func writeHTTPError(out *outbox, status int, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	writeHTTP(out, status, "application/json", body, false)
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 411:
		return "Length Required"
	case 413:
		return "Content Too Large"
	case 429:
		return "Too Many Requests"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	}
	return "Status"
}

// oaRequest is the part of OpenAI's completions request we honor.
type oaRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"` // a string or a list of one string
	Suffix      string          `json:"suffix"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature float32         `json:"temperature"`
	TopP        float32         `json:"top_p"`
	Stop        json.RawMessage `json:"stop"` // a string or a list of strings
	Stream      bool            `json:"stream"`
	N           int             `json:"n"`
	User        string          `json:"user"`
}

type oaChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type oaResponse struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaUsage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Total      int `json:"total_tokens"`
}

// stringOrList decodes a JSON string or list of strings; absent is nil.
func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("must be a string or a list of strings")
	}
	return list, nil
}

// handleHTTP answers one request and reports whether the connection may carry another.
func (s *Server) handleHTTP(out *outbox, r *httpRequest, client string) bool {
	if !loopbackHost(r.header["host"]) {
		writeHTTPError(out, 403, "Host must be a loopback address")
		return false
	}
	if _, ok := r.header["origin"]; ok {
		writeHTTPError(out, 403, "requests from web pages are not served")
		return false
	}
	path, _, _ := strings.Cut(r.target, "?")
	switch {
	case path == "/v1/models" && r.method == "GET":
		body, _ := json.Marshal(map[string]any{"object": "list", "data": []any{
			map[string]any{"id": s.opt.ModelName, "object": "model", "owned_by": "laya"},
		}})
		writeHTTP(out, 200, "application/json", body, true)
		return true
	case path == "/v1/completions" && r.method == "POST":
	case path == "/v1/completions" || path == "/v1/models":
		writeHTTPError(out, 405, "method not allowed")
		return false
	default:
		writeHTTPError(out, 404, "no such endpoint")
		return false
	}

	var q oaRequest
	if err := json.Unmarshal(r.body, &q); err != nil {
		writeHTTPError(out, 400, "malformed JSON: "+err.Error())
		return false
	}
	prompts, err := stringOrList(q.Prompt)
	if err != nil || len(prompts) != 1 {
		writeHTTPError(out, 400, "prompt must be one string")
		return false
	}
	stop, err := stringOrList(q.Stop)
	if err != nil {
		writeHTTPError(out, 400, "stop "+err.Error())
		return false
	}
	maxTokens := 16 // OpenAI's default
	if q.MaxTokens != nil {
		maxTokens = *q.MaxTokens
	}
	if q.N > 1 || maxTokens < 0 || q.Temperature < 0 || q.TopP < 0 || q.TopP > 1 {
		writeHTTPError(out, 400, "n must be 1; max_tokens, temperature and top_p in range")
		return false
	}
	if msg := fieldsError(q.User, "", stop); msg != "" {
		writeHTTPError(out, 400, msg)
		return false
	}
	if q.User != "" {
		client = "openai:" + q.User
	}
	req := complete.Request{Prefix: prompts[0], Suffix: q.Suffix, App: "openai", MaxTokens: maxTokens,
		Temperature: q.Temperature, TopP: q.TopP, Stop: stop}
	resp := oaResponse{ID: "cmpl-" + strconv.FormatInt(time.Now().UnixNano(), 36), Object: "text_completion",
		Created: time.Now().Unix(), Model: s.opt.ModelName}

	ctx, cancel := context.WithCancel(out.ctx)
	defer cancel()
	var onText func(string)
	if q.Stream {
		out.put([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"))
		onText = func(t string) {
			chunk := resp
			chunk.Choices = []oaChoice{{Text: t}}
			putEvent(out, chunk)
		}
	}
	sug, err := s.c.Complete(ctx, client, req, onText)
	if err != nil {
		if q.Stream {
			putEvent(out, map[string]any{"error": map[string]any{"message": err.Error()}})
			return false
		}
		writeHTTPError(out, 500, err.Error())
		return false
	}
	finish := "stop"
	if sug.Stop == "max_tokens" {
		finish = "length"
	}
	usage := &oaUsage{Prompt: sug.Prompt, Completion: sug.Tokens, Total: sug.Prompt + sug.Tokens}
	if q.Stream {
		resp.Choices = []oaChoice{{FinishReason: &finish}}
		resp.Usage = usage
		putEvent(out, resp)
		out.put([]byte("data: [DONE]\n\n"))
		return false
	}
	resp.Choices = []oaChoice{{Text: sug.Text, FinishReason: &finish}}
	resp.Usage = usage
	body, _ := json.Marshal(resp)
	writeHTTP(out, 200, "application/json", body, true)
	return true
}

func putEvent(out *outbox, v any) {
	b, _ := json.Marshal(v)
	out.put(append(append([]byte("data: "), b...), '\n', '\n'))
}
