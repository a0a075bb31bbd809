package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/layaapp/laya/server"
)

// ollamaRequest is the part of Ollama's /api/generate request Laya honors. system, template,
// raw, context and keep_alive are accepted and ignored: Laya completes the text as it is.
type ollamaRequest struct {
	Model   string        `json:"model"`
	Prompt  string        `json:"prompt"`
	Suffix  string        `json:"suffix"`
	Stream  *bool         `json:"stream"` // absent means true
	Options ollamaOptions `json:"options"`
}

type ollamaOptions struct {
	NumPredict  *int            `json:"num_predict"`
	Temperature *float32        `json:"temperature"`
	TopK        int             `json:"top_k"`
	TopP        float32         `json:"top_p"`
	Stop        json.RawMessage `json:"stop"` // a list of strings (or one string)
}

// ollamaResponse is one line of Ollama's answer; the last has Done and the counts.
type ollamaResponse struct {
	Model           string `json:"model"`
	CreatedAt       string `json:"created_at"`
	Response        string `json:"response"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason,omitempty"`
	TotalDuration   int64  `json:"total_duration,omitempty"`
	PromptEvalCount int    `json:"prompt_eval_count,omitempty"`
	EvalCount       int    `json:"eval_count,omitempty"`
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{map[string]any{
		"name": s.opt.ModelName, "model": s.opt.ModelName, "modified_at": time.Time{}.Format(time.RFC3339),
		"size": 0, "digest": "", "details": map[string]any{"format": "laya"},
	}}})
}

// ollamaShow describes the model in the fields clients read: the context length in model_info
// and "insert" (fill-in-the-middle with suffix) among the capabilities.
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	info := map[string]any{"general.architecture": "laya"}
	if s.opt.ContextLength > 0 {
		info["laya.context_length"] = s.opt.ContextLength
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile": "", "parameters": "", "template": "{{ .Prompt }}",
		"details":      map[string]any{"format": "laya", "family": "laya"},
		"model_info":   info,
		"capabilities": []string{"completion", "insert"},
	})
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var q ollamaRequest
	if !s.decode(w, r, &q) {
		return
	}
	stop, err := stringOrList(q.Options.Stop)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "options.stop "+err.Error())
		return
	}
	sr := server.Request{Prefix: q.Prompt, Suffix: q.Suffix, App: "ollama", TopK: q.Options.TopK,
		TopP: q.Options.TopP, Stop: stop}
	if t := q.Options.Temperature; t != nil {
		sr.Temperature = *t
	}
	if n := q.Options.NumPredict; n != nil && *n > 0 {
		sr.MaxTokens = *n // -1 (until done) and -2 (fill the context) take Laya's default
	}
	req, ok := s.request(w, r, sr, "options.")
	if !ok {
		return
	}
	model := q.Model
	if model == "" {
		model = s.opt.ModelName
	}
	stream := q.Stream == nil || *q.Stream
	line := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	start := time.Now()
	var onPiece func(string) error
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		onPiece = func(t string) error {
			return line(ollamaResponse{Model: model, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano), Response: t})
		}
	}
	f, code := s.run(w, r, session("ollama", q.Model), req, onPiece)
	if code != http.StatusOK {
		msg := failure(f)
		if stream {
			line(map[string]string{"error": msg})
			return
		}
		s.fail(w, r, code, msg)
		return
	}
	total := time.Since(start).Nanoseconds()
	final := ollamaResponse{Model: model, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano), Done: true,
		DoneReason: finishReason(f.Stop), TotalDuration: total, PromptEvalCount: f.Prompt, EvalCount: f.Tokens}
	if stream {
		line(final)
		return
	}
	final.Response = f.Text
	writeJSON(w, http.StatusOK, final)
}
