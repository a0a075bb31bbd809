package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/server"
)

// echo is a fake completer: it suggests "<" + prefix-end + ">" (the last 20 bytes of the
// prefix), one rune per piece, after delay per piece.
type echo struct {
	delay time.Duration
	mu    sync.Mutex
	calls []call
	busy  atomic.Int64
}

type call struct {
	client string
	req    complete.Request
}

func (e *echo) Complete(ctx context.Context, client string, req complete.Request, onText func(string)) (complete.Suggestion, error) {
	e.busy.Add(1)
	defer e.busy.Add(-1)
	e.mu.Lock()
	e.calls = append(e.calls, call{client, req})
	e.mu.Unlock()
	if req.Prefix == "fail" {
		return complete.Suggestion{}, errors.New("fake failure")
	}
	text := "<" + req.Prefix[max(0, len(req.Prefix)-20):] + ">"
	for _, r := range text {
		if err := ctx.Err(); err != nil {
			return complete.Suggestion{Stop: "canceled"}, err
		}
		time.Sleep(e.delay)
		if onText != nil {
			onText(string(r))
		}
	}
	return complete.Suggestion{Text: text, Tokens: len(text), Prompt: 7, Reused: 2, Stop: "eos", Latency: time.Millisecond}, nil
}

func (e *echo) last(t *testing.T) call {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.calls) == 0 {
		t.Fatal("no request reached the completer")
	}
	return e.calls[len(e.calls)-1]
}

const testKey = "laya-test-key"

func start(t *testing.T, c server.Completer, opt Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(c, opt)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, server.ErrClosed) {
			t.Errorf("Serve returned %v, want server.ErrClosed", err)
		}
	})
	return "http://" + l.Addr().String()
}

// do sends a request with the test key (unless key is "-") and returns status and body.
func do(t *testing.T, method, url, body string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	// A connection per request: no test meets another's idle connections in a shared pool.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestOpenAICompletion(t *testing.T) {
	e := &echo{}
	url := start(t, e, Options{Key: testKey, ModelName: "laya-code"})
	status, body, h := do(t, "POST", url+"/v1/completions", `{"model":"x","prompt":"def f","suffix":"\n","max_tokens":5,"temperature":0.5,"top_p":1,"stop":"\n","user":"ed"}`)
	if status != 200 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", status, h.Get("Content-Type"), body)
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
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "text_completion" || resp.Model != "laya-code" || len(resp.Choices) != 1 ||
		resp.Choices[0].Text != "<def f>" || resp.Choices[0].FinishReason != "stop" ||
		resp.Usage.Prompt != 7 || resp.Usage.Completion != 7 || resp.Usage.Total != 14 {
		t.Errorf("response %+v", resp)
	}
	c := e.last(t)
	want := complete.Request{Prefix: "def f", Suffix: "\n", App: "openai", MaxTokens: 5, Temperature: 0.5, Stop: []string{"\n"}}
	if c.client != "openai:ed" || fmt.Sprint(c.req) != fmt.Sprint(want) {
		t.Errorf("completer got %q %+v, want openai:ed %+v", c.client, c.req, want)
	}
	// Without max_tokens, OpenAI's default of 16.
	do(t, "POST", url+"/v1/completions", `{"prompt":"x"}`)
	if c := e.last(t); c.req.MaxTokens != 16 || c.client != "openai" {
		t.Errorf("defaults: %q %+v", c.client, c.req)
	}
	status, body, _ = do(t, "GET", url+"/v1/models", "")
	if status != 200 || !strings.Contains(body, `"id":"laya-code"`) || !strings.Contains(body, `"object":"list"`) {
		t.Errorf("models: %d %s", status, body)
	}
}

// events reads server-sent events up to [DONE] or the end of the body.
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, block := range strings.Split(body, "\n\n") {
		if block == "" {
			continue
		}
		data, ok := strings.CutPrefix(block, "data: ")
		if !ok {
			t.Fatalf("event %q is not a data line", block)
		}
		out = append(out, data)
	}
	return out
}

func TestOpenAIStream(t *testing.T) {
	url := start(t, &echo{}, Options{Key: testKey})
	status, body, h := do(t, "POST", url+"/v1/completions", `{"prompt":"ab","stream":true}`)
	if status != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s: %s", status, h.Get("Content-Type"), body)
	}
	evs := events(t, body)
	if len(evs) < 2 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	var text strings.Builder
	for i, ev := range evs[:len(evs)-1] {
		var chunk struct {
			Object  string
			Choices []struct {
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				Total int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil || len(chunk.Choices) != 1 || chunk.Object != "text_completion" {
			t.Fatalf("event %d %q: %v", i, ev, err)
		}
		last := i == len(evs)-2
		if (chunk.Choices[0].FinishReason != nil) != last || (chunk.Usage != nil) != last {
			t.Errorf("event %d %q: finish_reason and usage belong to the last event only", i, ev)
		}
		text.WriteString(chunk.Choices[0].Text)
	}
	if text.String() != "<ab>" {
		t.Errorf("streamed %q", text.String())
	}
}

func TestRejects(t *testing.T) {
	e := &echo{}
	url := start(t, e, Options{Key: testKey, MaxRequestBytes: 100})
	cases := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		msg                      string
	}{
		{"bad json", "POST", "/v1/completions", `{"prompt":`, nil, 400, "malformed JSON"},
		{"prompt list", "POST", "/v1/completions", `{"prompt":["a","b"]}`, nil, 400, "prompt"},
		{"bad stop", "POST", "/v1/completions", `{"prompt":"a","stop":5}`, nil, 400, "stop"},
		{"n", "POST", "/v1/completions", `{"prompt":"a","n":3}`, nil, 400, "n must be 1"},
		{"negative max", "POST", "/v1/completions", `{"prompt":"a","max_tokens":-1}`, nil, 400, "max_tokens"},
		{"top_p", "POST", "/v1/completions", `{"prompt":"a","top_p":2}`, nil, 400, "top_p"},
		{"too large", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 200) + `"}`, nil, 413, "larger than 100"},
		{"method", "GET", "/v1/completions", "", nil, 405, ""},
		{"not found", "GET", "/admin", "", nil, 404, ""},
		{"web page", "POST", "/v1/completions", `{"prompt":"a"}`, []string{"Origin", "https://example.org"}, 403, "web pages"},
		{"rebinding", "POST", "/v1/completions", `{"prompt":"a"}`, []string{"Host", "evil.example"}, 403, "loopback"},
		{"ollama shape", "POST", "/api/generate", `{"prompt":`, nil, 400, `{"error":"malformed JSON`},
		{"ollama field", "POST", "/api/generate", `{"prompt":"a","options":{"top_k":-2}}`, nil, 400, "options.top_k"},
		{"infill field", "POST", "/infill", `{"input_prefix":"a","temperature":-1}`, nil, 400, "temperature"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+testKey)
		if len(tc.header) == 2 {
			if tc.header[0] == "Host" {
				req.Host = tc.header[1]
			} else {
				req.Header.Set(tc.header[0], tc.header[1])
			}
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, resp.StatusCode, b, tc.status, tc.msg)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.calls) != 0 {
		t.Errorf("%d bad requests reached the completer", len(e.calls))
	}
}

// Every route needs the key; without one configured, none is asked.
func TestAPIKey(t *testing.T) {
	e := &echo{}
	url := start(t, e, Options{Key: testKey})
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/models", ""},
		{"POST", "/v1/completions", `{"prompt":"a"}`},
		{"POST", "/infill", `{"input_prefix":"a"}`},
		{"POST", "/api/generate", `{"prompt":"a","stream":false}`},
		{"GET", "/api/tags", ""},
		{"POST", "/api/show", `{"model":"m"}`},
	}
	for _, rt := range routes {
		for _, auth := range []string{"", "Bearer wrong", "Basic " + testKey, testKey, "Bearer " + testKey + "x"} {
			status, body, h := do(t, rt.method, url+rt.path, rt.body, "Authorization", auth)
			if status != 401 || !strings.Contains(body, "API key") || h.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s %s with Authorization %q: %d %s, want 401 naming the API key", rt.method, rt.path, auth, status, body)
			}
		}
		if status, body, _ := do(t, rt.method, url+rt.path, rt.body, "Authorization", "bearer "+testKey); status != 200 {
			t.Errorf("%s %s with the key: %d %s", rt.method, rt.path, status, body)
		}
	}
	e.mu.Lock()
	n := len(e.calls)
	e.mu.Unlock()
	if n != 3 {
		t.Errorf("%d requests reached the completer, want the 3 with the key", n)
	}
	open := start(t, &echo{}, Options{})
	if status, body, _ := do(t, "POST", open+"/v1/completions", `{"prompt":"a"}`, "Authorization", ""); status != 200 {
		t.Errorf("without a key configured: %d %s", status, body)
	}
}

// /infill as llama.vscode sends it: extra context chunks, the lines before the cursor in
// input_prefix and the current line's start in prompt; the answer in llama.cpp's shape.
func TestInfill(t *testing.T) {
	e := &echo{}
	url := start(t, e, Options{Key: testKey, ModelName: "m"})
	req := `{"input_prefix":"func f() {\n","input_suffix":"\n}\n","prompt":"\treturn","input_extra":[{"filename":"a.go","text":"package a"},{"filename":"b.go","text":"var x = 1\n"}],
		"n_predict":24,"top_k":40,"top_p":0.99,"stream":false,"samplers":["top_k","top_p","infill"],"cache_prompt":true,"t_max_prompt_ms":500,"t_max_predict_ms":1000,"n_indent":1}`
	status, body, _ := do(t, "POST", url+"/infill", req)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var resp struct {
		Content         string
		Stop            bool
		StopType        string `json:"stop_type"`
		TokensPredicted int    `json:"tokens_predicted"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		TokensCached    int    `json:"tokens_cached"`
		Truncated       *bool
		Timings         struct {
			PromptN    int `json:"prompt_n"`
			PredictedN int `json:"predicted_n"`
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	c := e.last(t)
	want := complete.Request{Prefix: "package a\nvar x = 1\nfunc f() {\n\treturn", Suffix: "\n}\n", App: "llama.cpp", MaxTokens: 24, TopK: 40, TopP: 0.99}
	if c.client != "llama" {
		t.Errorf("session %q, want the shared llama one", c.client)
	}
	text := "<" + want.Prefix[len(want.Prefix)-20:] + ">"
	if resp.Content != text || !resp.Stop || resp.StopType != "eos" || resp.TokensPredicted != len(text) ||
		resp.TokensEvaluated != 7 || resp.TokensCached != 2 || resp.Truncated == nil || resp.Timings.PromptN != 5 || resp.Timings.PredictedN != len(text) {
		t.Errorf("response %s", body)
	}
	if fmt.Sprint(c.req) != fmt.Sprint(want) {
		t.Errorf("completer got %+v, want %+v", c.req, want)
	}
	do(t, "POST", url+"/infill", `{"input_prefix":"x","id_slot":0}`)
	if c := e.last(t); c.client != "llama:0" {
		t.Errorf("id_slot 0: session %q", c.client)
	}
	// n_predict 0 warms the cache in llama.cpp; here it asks nothing of the model.
	status, body, _ = do(t, "POST", url+"/infill", `{"input_prefix":"x","n_predict":0}`)
	if n := len(e.calls); status != 200 || !strings.Contains(body, `"content":""`) || n != 2 {
		t.Errorf("n_predict 0: %d %s, %d completions", status, body, n)
	}
	// Streaming: events of {"content": piece, "stop": false}, then one with "stop": true.
	status, body, _ = do(t, "POST", url+"/infill", `{"input_prefix":"ab","input_suffix":"","stream":true}`)
	evs := events(t, body)
	var streamed strings.Builder
	for i, ev := range evs {
		var chunk struct {
			Content  string
			Stop     bool
			StopType string `json:"stop_type"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		if last := i == len(evs)-1; chunk.Stop != last || (last && (chunk.Content != "" || chunk.StopType != "eos")) {
			t.Errorf("event %d of %d: %s", i, len(evs), ev)
		}
		streamed.WriteString(chunk.Content)
	}
	if status != 200 || streamed.String() != "<ab>" {
		t.Errorf("stream: %d, text %q from %q", status, streamed.String(), evs)
	}
	// Too many extra chunks is a clear error.
	chunks := strings.Repeat(`{"filename":"f","text":"t"},`, maxExtra)
	status, body, _ = do(t, "POST", url+"/infill", `{"input_prefix":"x","input_extra":[`+chunks+`{"text":"t"}]}`)
	if status != 400 || !strings.Contains(body, "input_extra") {
		t.Errorf("65 chunks: %d %s", status, body)
	}
}

// /api/generate as Continue and Twinny send it: prompt, suffix, options; NDJSON by default.
func TestOllamaGenerate(t *testing.T) {
	e := &echo{}
	url := start(t, e, Options{Key: testKey, ModelName: "m", ContextLength: 1024})
	status, body, h := do(t, "POST", url+"/api/generate", `{"model":"qwen2.5-coder:1.5b","prompt":"x = ","suffix":"\nprint(x)","raw":true,"keep_alive":"30m",
		"options":{"num_predict":64,"temperature":0.01,"top_k":1,"top_p":1,"stop":["\n\n","<|endoftext|>"],"num_ctx":4096}}`)
	if status != 200 || h.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("%d %s: %s", status, h.Get("Content-Type"), body)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	var text strings.Builder
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	for i, m := range lines {
		last := i == len(lines)-1
		if m["model"] != "qwen2.5-coder:1.5b" || m["done"] != last || m["created_at"] == nil {
			t.Errorf("line %d of %d: %v", i, len(lines), m)
		}
		text.WriteString(m["response"].(string))
		if last && (m["done_reason"] != "stop" || m["prompt_eval_count"] != 7.0 || m["eval_count"] != 6.0 || m["total_duration"] == nil) {
			t.Errorf("final line %v", m)
		}
	}
	if text.String() != "<x = >" {
		t.Errorf("streamed %q", text.String())
	}
	c := e.last(t)
	want := complete.Request{Prefix: "x = ", Suffix: "\nprint(x)", App: "ollama", MaxTokens: 64, Temperature: 0.01, TopK: 1, Stop: []string{"\n\n", "<|endoftext|>"}}
	if fmt.Sprint(c.req) != fmt.Sprint(want) || c.client != "ollama:qwen2.5-coder:1.5b" {
		t.Errorf("completer got %q %+v, want ollama:qwen2.5-coder:1.5b %+v", c.client, c.req, want)
	}
	status, body, h = do(t, "POST", url+"/api/generate", `{"model":"m","prompt":"y","stream":false}`)
	var one struct {
		Response   string
		Done       bool
		DoneReason string `json:"done_reason"`
	}
	if err := json.Unmarshal([]byte(body), &one); err != nil || status != 200 || h.Get("Content-Type") != "application/json" ||
		one.Response != "<y>" || !one.Done || one.DoneReason != "stop" {
		t.Errorf("stream false: %d %s (%v)", status, body, err)
	}
	status, body, _ = do(t, "GET", url+"/api/tags", "")
	if status != 200 || !strings.Contains(body, `"name":"m"`) {
		t.Errorf("tags: %d %s", status, body)
	}
	status, body, _ = do(t, "POST", url+"/api/show", `{"model":"m"}`)
	if status != 200 || !strings.Contains(body, `"laya.context_length":1024`) || !strings.Contains(body, `"insert"`) {
		t.Errorf("show: %d %s", status, body)
	}
}

// Idle connections, however many, do not lock the owner out: the one idle the longest makes
// room, and connections that send nothing are closed after ReadTimeout.
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	url := start(t, &echo{}, Options{Key: testKey, MaxConns: 4, ReadTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(url, "http://")
	var idle []net.Conn
	for range 12 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		idle = append(idle, nc)
	}
	t0 := time.Now()
	if status, body, _ := do(t, "POST", url+"/v1/completions", `{"prompt":"owner"}`); status != 200 {
		t.Fatalf("the owner's request with 12 idle connections: %d %s", status, body)
	}
	if d := time.Since(t0); d > 250*time.Millisecond {
		t.Errorf("the owner waited %v", d)
	}
	buf := make([]byte, 1)
	for i, nc := range idle {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("idle connection %d: read %v, want it closed by the server", i, err)
		}
	}
}

// With every connection serving a request, one more gets the server's 503, not a reset.
func TestOverLimit(t *testing.T) {
	e := &echo{delay: 20 * time.Millisecond}
	url := start(t, e, Options{Key: testKey, MaxConns: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, "POST", url+"/v1/completions", `{"prompt":"`+strings.Repeat("x", 20)+`"}`)
		}()
	}
	for e.busy.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	status, body, _ := do(t, "POST", url+"/v1/completions", `{"prompt":"late"}`)
	if status != 503 || !strings.Contains(body, "too many connections") {
		t.Errorf("over the limit: %d %s", status, body)
	}
	wg.Wait()
}

func TestRateLimit(t *testing.T) {
	url := start(t, &echo{}, Options{Key: testKey, Rate: 0.001, Burst: 2})
	var got []int
	for range 3 {
		status, _, _ := do(t, "POST", url+"/v1/completions", `{"prompt":"a"}`)
		got = append(got, status)
	}
	if fmt.Sprint(got) != "[200 200 429]" {
		t.Errorf("statuses %v, want [200 200 429]", got)
	}
}

func TestLoopbackOnly(t *testing.T) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	if err := New(&echo{}, Options{}).Serve(l); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("Serve on %s: %v, want ErrNotLoopback", l.Addr(), err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "laya")
	path := filepath.Join(dir, "api-key")
	key, created, err := LoadOrCreateKey(path)
	if err != nil || !created || !strings.HasPrefix(key, "laya-") || len(key) != 69 {
		t.Fatalf("first call: %q %v %v", key, created, err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	again, created, err := LoadOrCreateKey(path)
	if err != nil || created || again != key {
		t.Errorf("second call: %q %v %v, want the same key", again, created, err)
	}
	other, _, _ := LoadOrCreateKey(filepath.Join(dir, "other"))
	if other == key {
		t.Error("two key files got the same key")
	}
	os.Chmod(path, 0o644)
	if _, _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "readable by other users") {
		t.Errorf("a 0644 key file: %v", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, maxKeyFile+1), 0o600)
	if _, _, err := LoadOrCreateKey(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized key file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	if _, _, err := LoadOrCreateKey(empty); err == nil {
		t.Error("an empty key file was accepted")
	}
	if _, _, err := LoadOrCreateKey(dir); err == nil {
		t.Error("a directory was accepted as the key file")
	}
}

// A request may run longer than ReadTimeout, which bounds only reading it; a body sent too
// slowly is cut off.
func TestLongRequestOutlivesReadTimeout(t *testing.T) {
	e := &echo{delay: 40 * time.Millisecond}
	url := start(t, e, Options{Key: testKey, ReadTimeout: 200 * time.Millisecond})
	status, body, _ := do(t, "POST", url+"/v1/completions", `{"prompt":"abcdefgh"}`) // 400 ms
	if status != 200 || !strings.Contains(body, `"text":"\u003cabcdefgh\u003e"`) {
		t.Errorf("long request: %d %s", status, body)
	}
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{", testKey)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(nc)
	if !strings.Contains(string(b), " 400 ") && !strings.Contains(string(b), " 408 ") && len(b) != 0 {
		t.Errorf("slow body: %q", b)
	}
	if e.last(t).req.Prefix != "abcdefgh" {
		t.Error("the slow body reached the completer")
	}
}

// failing answers every request with its error.
type failing struct{ err error }

func (f failing) Complete(context.Context, string, complete.Request, func(string)) (complete.Suggestion, error) {
	return complete.Suggestion{}, f.err
}

// A full session pool is 503 (try again), any other failure 500, in each protocol's shape.
func TestCompletionErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
	}{{complete.ErrBusy, 503}, {errors.New("engine: forward pass: boom"), 500}} {
		url := start(t, failing{tc.err}, Options{Key: testKey})
		for _, rt := range []struct{ path, body, shape string }{
			{"/v1/completions", `{"prompt":"a"}`, `{"error":{"code":`},
			{"/infill", `{"input_prefix":"a"}`, `{"error":{"code":`},
			{"/api/generate", `{"prompt":"a","stream":false}`, `{"error":"`},
		} {
			status, body, _ := do(t, "POST", url+rt.path, rt.body)
			if status != tc.status || !strings.HasPrefix(body, rt.shape) || !strings.Contains(body, tc.err.Error()) {
				t.Errorf("%s with %v: %d %s", rt.path, tc.err, status, body)
			}
		}
	}
}
