package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/layaapp/laya/server"
)

// oaRequest is the part of OpenAI's completions request Laya honors.
type oaRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"` // a string or a list of one string
	Suffix      string          `json:"suffix"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature float32         `json:"temperature"`
	TopP        *float32        `json:"top_p"`
	Stop        json.RawMessage `json:"stop"` // a string or a list of strings
	Stream      bool            `json:"stream"`
	N           *int            `json:"n"`
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

func (s *Server) openAIModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.opt.ModelName, "object": "model", "created": 0, "owned_by": "laya"},
	}})
}

func (s *Server) openAICompletions(w http.ResponseWriter, r *http.Request) {
	var q oaRequest
	if !s.decode(w, r, &q) {
		return
	}
	prompts, err := stringOrList(q.Prompt)
	if err != nil || len(prompts) != 1 {
		s.fail(w, r, http.StatusBadRequest, "prompt must be one string")
		return
	}
	stop, err := stringOrList(q.Stop)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "stop "+err.Error())
		return
	}
	if q.N != nil && *q.N != 1 {
		s.fail(w, r, http.StatusBadRequest, "n must be 1")
		return
	}
	sr := server.Request{Prefix: prompts[0], Suffix: q.Suffix, App: "openai", MaxTokens: 16, // OpenAI's default
		Temperature: q.Temperature, Stop: stop, Client: q.User}
	if q.MaxTokens != nil {
		sr.MaxTokens = *q.MaxTokens
	}
	if q.TopP != nil {
		sr.TopP = *q.TopP
	}
	req, ok := s.request(w, r, sr, "")
	if !ok {
		return
	}
	now := time.Now()
	resp := oaResponse{ID: "cmpl-" + strconv.FormatInt(now.UnixNano(), 36), Object: "text_completion",
		Created: now.Unix(), Model: s.opt.ModelName}
	var onPiece func(string) error
	if q.Stream {
		startEvents(w)
		onPiece = func(t string) error {
			chunk := resp
			chunk.Choices = []oaChoice{{Text: t}}
			return event(w, chunk)
		}
	}
	f, code := s.run(w, r, session("openai", sr.Client), req, onPiece)
	if code != http.StatusOK {
		msg := failure(f)
		if q.Stream {
			event(w, map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}})
			return
		}
		s.fail(w, r, code, msg)
		return
	}
	finish := finishReason(f.Stop)
	resp.Usage = &oaUsage{Prompt: f.Prompt, Completion: f.Tokens, Total: f.Prompt + f.Tokens}
	if q.Stream {
		resp.Choices = []oaChoice{{FinishReason: &finish}}
		event(w, resp)
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	resp.Choices = []oaChoice{{Text: f.Text, FinishReason: &finish}}
	writeJSON(w, http.StatusOK, resp)
}

// finishReason is OpenAI's and Ollama's name for why a completion stopped: "length" at a
// token limit, "stop" otherwise.
func finishReason(stop string) string {
	if stop == "max_tokens" || stop == "context" {
		return "length"
	}
	return "stop"
}

// startEvents begins a streamed answer of server-sent events.
func startEvents(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// event writes v as one server-sent event.
func event(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "data: %s\n\n", b)
	return err
}
