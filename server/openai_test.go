package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func startOpenAI(t *testing.T, opt Options) (*echo, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{}
	s := New(e, opt)
	done := make(chan error, 1)
	go func() { done <- s.ServeOpenAI(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("ServeOpenAI returned %v", err)
		}
	})
	return e, l.Addr().String()
}

type httpResp struct {
	status int
	header map[string]string
	body   string
}

// readResp parses one response the simple way a test can trust: status line, headers, then
// Content-Length bytes or everything up to the close.
func readResp(t *testing.T, br *bufio.Reader) httpResp {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("status line: %v", err)
	}
	var r httpResp
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d", &r.status); err != nil {
		t.Fatalf("status line %q", line)
	}
	r.header = map[string]string{}
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("header: %v", err)
		}
		h = strings.TrimRight(h, "\r\n")
		if h == "" {
			break
		}
		k, v, _ := strings.Cut(h, ":")
		r.header[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	if r.status < 200 {
		return r // informational: no body
	}
	if cl, ok := r.header["content-length"]; ok {
		n, _ := strconv.Atoi(cl)
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			t.Fatalf("body: %v", err)
		}
		r.body = string(b)
	} else {
		b, _ := io.ReadAll(br)
		r.body = string(b)
	}
	return r
}

func post(body string, extra ...string) string {
	return "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		strings.Join(extra, "") + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func roundTrip(t *testing.T, addr, req string) (httpResp, *bufio.Reader, net.Conn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	return readResp(t, br), br, nc
}

func TestOpenAICompletion(t *testing.T) {
	e, addr := startOpenAI(t, Options{ModelName: "laya-code"})
	r, br, nc := roundTrip(t, addr, post(`{"model":"x","prompt":"def f","suffix":"\n","max_tokens":5,"temperature":0,"stop":"\n"}`))
	if r.status != 200 || r.header["content-type"] != "application/json" {
		t.Fatalf("response %+v", r)
	}
	var resp struct {
		Object  string
		Model   string
		Choices []struct {
			Text         string
			Index        int
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(r.body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "text_completion" || resp.Model != "laya-code" || len(resp.Choices) != 1 ||
		resp.Choices[0].Text != "<def f>" || resp.Choices[0].FinishReason != "stop" ||
		resp.Usage.Completion != 7 || resp.Usage.Total != resp.Usage.Prompt+7 {
		t.Errorf("response %s", r.body)
	}
	got := e.calls[0].req
	if got.Suffix != "\n" || got.MaxTokens != 5 || len(got.Stop) != 1 || got.Stop[0] != "\n" || got.App != "openai" {
		t.Errorf("completer got %+v", got)
	}
	// Keep-alive: a second request on the same connection, prompt as a list of one.
	io.WriteString(nc, post(`{"prompt":["again"],"stop":["a","b"]}`))
	if r := readResp(t, br); r.status != 200 || !strings.Contains(r.body, `"text":"\u003cagain\u003e"`) {
		t.Errorf("second response %+v", r)
	}
	if got := e.calls[1].req; got.MaxTokens != 16 || len(got.Stop) != 2 {
		t.Errorf("defaults: %+v", got)
	}
}

func TestOpenAIStream(t *testing.T) {
	_, addr := startOpenAI(t, Options{})
	r, _, _ := roundTrip(t, addr, post(`{"prompt":"abc","stream":true}`))
	if r.status != 200 || r.header["content-type"] != "text/event-stream" {
		t.Fatalf("response %+v", r)
	}
	var text strings.Builder
	events := strings.Split(strings.TrimSuffix(r.body, "\n\n"), "\n\n")
	if events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", r.body)
	}
	finish := ""
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &chunk); err != nil || len(chunk.Choices) != 1 {
			t.Fatalf("event %q: %v", ev, err)
		}
		text.WriteString(chunk.Choices[0].Text)
		if chunk.Choices[0].FinishReason != nil {
			finish = *chunk.Choices[0].FinishReason
		}
	}
	if text.String() != "<abc>" || finish != "stop" {
		t.Errorf("streamed %q, finish %q", text.String(), finish)
	}
}

func TestOpenAIContinue(t *testing.T) {
	_, addr := startOpenAI(t, Options{})
	body := `{"prompt":"wait"}`
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	head := "POST /v1/completions HTTP/1.1\r\nHost: localhost:1\r\nExpect: 100-continue\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	io.WriteString(nc, head)
	br := bufio.NewReader(nc)
	if r := readResp(t, br); r.status != 100 {
		t.Fatalf("got %d before sending the body, want 100", r.status)
	}
	io.WriteString(nc, body)
	if r := readResp(t, br); r.status != 200 || !strings.Contains(r.body, "wait") {
		t.Errorf("response %+v", r)
	}
}

func TestOpenAIRejects(t *testing.T) {
	_, addr := startOpenAI(t, Options{MaxRequestBytes: 100})
	cases := []struct {
		name, req string
		status    int
	}{
		{"bad json", post(`{"prompt":`), 400},
		{"prompt list", post(`{"prompt":["a","b"]}`), 400},
		{"bad stop", post(`{"prompt":"a","stop":5}`), 400},
		{"n", post(`{"prompt":"a","n":3}`), 400},
		{"too large", post(`{"prompt":"` + strings.Repeat("x", 200) + `"}`), 413},
		{"no length", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 411},
		{"chunked", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
		{"header too large", "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + strings.Repeat("y", 20000) + "\r\n\r\n", 431},
		{"request line", "HELLO\r\n\r\n", 400},
		{"signed length", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: +2\r\n\r\n{}", 400},
		{"header line", "GET /v1/models HTTP/1.1\r\nno colon\r\n\r\n", 400},
		{"method", "GET /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405},
		{"not found", "GET /admin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404},
		{"web page", post(`{"prompt":"a"}`, "Origin: https://example.org\r\n"), 403},
		{"rebinding", strings.Replace(post(`{"prompt":"a"}`), "Host: 127.0.0.1", "Host: evil.example", 1), 403},
	}
	for _, tc := range cases {
		r, _, _ := roundTrip(t, addr, tc.req)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
		}
		if r.status >= 400 && !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: body %q has no error", tc.name, r.body)
		}
	}
	r, _, _ := roundTrip(t, addr, "GET /v1/models HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n")
	if r.status != 200 || !strings.Contains(r.body, `"laya"`) {
		t.Errorf("models: %+v", r)
	}
}

func TestOpenAILoopbackOnly(t *testing.T) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	if err := New(&echo{}, Options{}).ServeOpenAI(l); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("ServeOpenAI on %s: %v", l.Addr(), err)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// FuzzReadHTTPRequest: the hand-written parser never panics, never reads a body over the
// limit, and returns a body exactly as long as the Content-Length it accepted.
func FuzzReadHTTPRequest(f *testing.F) {
	f.Add([]byte(post(`{"prompt":"a"}`)))
	f.Add([]byte("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nabc"))
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: -1\r\nContent-Length: 2\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := readHTTPRequest(bufio.NewReaderSize(strings.NewReader(string(data)), 64), 100, func() {})
		if err != nil {
			return
		}
		if len(r.body) > 100 {
			t.Fatalf("body of %d bytes over the limit", len(r.body))
		}
		if cl, ok := r.header["content-length"]; ok && (strings.Trim(cl, "0123456789") != "" || atoi(cl) != len(r.body)) {
			t.Fatalf("Content-Length %s, body %d bytes", cl, len(r.body))
		}
	})
}

// The OpenAI endpoint bounds stop strings and the session key as the socket does: each stop
// string is checked against the text at every token, and each user is a session.
func TestOpenAIFieldBounds(t *testing.T) {
	e, addr := startOpenAI(t, Options{})
	stops := make([]string, maxStops+1)
	for i := range stops {
		stops[i] = `"s"`
	}
	cases := []struct{ name, body string }{
		{"many stops", `{"prompt":"a","stop":[` + strings.Join(stops, ",") + `]}`},
		{"long stop", `{"prompt":"a","stop":"` + strings.Repeat("x", maxName+1) + `"}`},
		{"long user", `{"prompt":"a","user":"` + strings.Repeat("u", maxName+1) + `"}`},
	}
	for _, tc := range cases {
		r, _, _ := roundTrip(t, addr, post(tc.body))
		if r.status != 400 || !strings.Contains(r.body, "limited to") {
			t.Errorf("%s: status %d, body %s; want 400 naming the limit", tc.name, r.status, r.body)
		}
	}
	e.mu.Lock()
	n := len(e.calls)
	e.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests reached the completer", n)
	}
	r, _, _ := roundTrip(t, addr, post(`{"prompt":"a","stop":["`+strings.Repeat("x", maxName)+`"],"user":"`+strings.Repeat("u", maxName)+`"}`))
	if r.status != 200 {
		t.Errorf("request at the limits: status %d, body %s", r.status, r.body)
	}
}
