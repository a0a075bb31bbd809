// Package server serves the warm completion engine to other processes of the same user over a
// Unix domain socket: the CLI, shell widgets and editor extensions send newline-delimited JSON
// requests and get the suggestion streamed back. Package server/httpapi serves the same
// completions over HTTP (OpenAI, llama.cpp and Ollama routes) on a loopback TCP port; both map
// their requests through Request.Completion and their answers through Final.
//
// Protocol: each line a client sends is one JSON object, either a request
//
//	{"id": "r1", "prefix": "text before the caret", "suffix": "text after it", "client": "…",
//	 "app": "…", "max_tokens": 32, "temperature": 0, "top_k": 0, "top_p": 0, "stop": ["…"]}
//
// (only "id" and "prefix" are required; "id" is a string or number chosen by the client and
// unique among its requests in flight; requests with the same "client" share a KV-cache session
// and a newer one cancels the older), or a cancellation {"cancel": "r1"}. For each request the
// server sends zero or more {"id": "r1", "text": "piece"} frames and then exactly one final
// frame {"id": "r1", "done": true, "text": "whole suggestion", "tokens": …, "stop": …}, with
// "canceled": true or "error": "…" instead when it did not complete. The final text is
// authoritative: it is "" when the model turned out unsure after pieces were streamed. A line
// the server cannot accept gets a final frame with "error" (and the id when it could read one).
//
// A connection must send its first request within a few seconds of connecting, finish a line it
// has begun within as long, and is closed after a longer idle time with nothing in flight; a
// connection beyond the limit gets one final frame with the error and is closed.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/layaapp/laya/complete"
)

// Request is one line a client sends: a completion request, or a cancellation when Cancel is set.
type Request struct {
	ID          json.RawMessage `json:"id,omitempty"`
	Cancel      json.RawMessage `json:"cancel,omitempty"`
	Client      string          `json:"client,omitempty"`
	App         string          `json:"app,omitempty"`
	Prefix      string          `json:"prefix"`
	Suffix      string          `json:"suffix,omitempty"`
	MaxTokens   int             `json:"max_tokens,omitempty"`
	Temperature float32         `json:"temperature,omitempty"`
	TopK        int             `json:"top_k,omitempty"`
	TopP        float32         `json:"top_p,omitempty"`
	Stop        []string        `json:"stop,omitempty"`
}

// Frame is one line the server sends: a piece of a suggestion, or the final answer (Done).
type Frame struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Text      string          `json:"text"`
	Done      bool            `json:"done,omitempty"`
	Canceled  bool            `json:"canceled,omitempty"`
	Error     string          `json:"error,omitempty"`
	Tokens    int             `json:"tokens,omitempty"`
	Prompt    int             `json:"prompt_tokens,omitempty"`
	Reused    int             `json:"reused,omitempty"`
	LatencyMS float64         `json:"latency_ms,omitempty"`
	Logprob   float64         `json:"logprob,omitempty"`
	Stop      string          `json:"stop,omitempty"`
}

// Bounds on request fields that cost work per generated token or memory per session.
const (
	maxName  = 256
	maxStops = 16
)

// Completion checks r's fields and returns the completion request it makes; top_p 1 (OpenAI's
// and Ollama's default) becomes 0, as both keep every token. The error names the field that is
// out of range. Every endpoint, socket or HTTP, maps requests through it.
func (r Request) Completion() (complete.Request, error) {
	switch {
	case r.MaxTokens < 0:
		return complete.Request{}, errors.New("max_tokens must not be negative")
	case r.Temperature < 0:
		return complete.Request{}, errors.New("temperature must not be negative")
	case r.TopK < 0:
		return complete.Request{}, errors.New("top_k must not be negative")
	case r.TopP < 0 || r.TopP > 1:
		return complete.Request{}, errors.New("top_p must be between 0 and 1")
	case len(r.Client) > maxName:
		return complete.Request{}, fmt.Errorf("client is limited to %d bytes", maxName)
	case len(r.App) > maxName:
		return complete.Request{}, fmt.Errorf("app is limited to %d bytes", maxName)
	case len(r.Stop) > maxStops:
		return complete.Request{}, fmt.Errorf("stop is limited to %d strings", maxStops)
	case slices.ContainsFunc(r.Stop, func(s string) bool { return len(s) > maxName }):
		return complete.Request{}, fmt.Errorf("stop strings are limited to %d bytes", maxName)
	}
	topP := r.TopP
	if topP == 1 {
		topP = 0
	}
	return complete.Request{
		Prefix: r.Prefix, Suffix: r.Suffix, App: r.App, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, TopK: r.TopK, TopP: topP, Stop: r.Stop,
	}, nil
}

// Final is the final frame of request id that ended with sug and err: the suggestion, or
// Canceled (a canceled or superseded request), or the error.
func Final(id json.RawMessage, sug complete.Suggestion, err error) Frame {
	f := Frame{ID: id, Done: true}
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
	return f
}

// validID reports whether raw is a JSON string or number, the id forms the protocol allows.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(raw, &s) == nil && s != ""
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		return json.Unmarshal(raw, &n) == nil
	}
	return false
}

// CheckSocketPath refuses a socket path longer than the system's sockaddr_un holds (108 bytes
// on Linux, 103 and a NUL on macOS), which the kernel reports only as "invalid argument".
func CheckSocketPath(path string) error {
	limit := 103
	if runtime.GOOS == "linux" {
		limit = 108
	}
	if len(path) > limit {
		return fmt.Errorf("server: socket path %s is %d bytes; Unix sockets allow at most %d: choose a shorter one (--socket or $LAYA_SOCKET)", path, len(path), limit)
	}
	return nil
}
