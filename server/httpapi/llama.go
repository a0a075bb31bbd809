package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/layaapp/laya/server"
)

// infillRequest is the part of llama.cpp server's /infill request Laya honors. Options that
// tune llama.cpp's own machinery (samplers, cache_prompt, id_slot, t_max_*, n_indent) are
// accepted and ignored: Laya always reuses the session's cache and cleans suggestions itself.
// Each id_slot is a session of its own.
type infillRequest struct {
	InputPrefix string       `json:"input_prefix"`
	InputSuffix string       `json:"input_suffix"`
	InputExtra  []infillFile `json:"input_extra"`
	// Prompt continues input_prefix: llama.vscode sends the current line's text before the
	// cursor here and the lines above in input_prefix.
	Prompt      string   `json:"prompt"`
	NPredict    *int     `json:"n_predict"`
	Temperature float32  `json:"temperature"`
	TopK        int      `json:"top_k"`
	TopP        float32  `json:"top_p"`
	Stop        []string `json:"stop"`
	Stream      bool     `json:"stream"`
	// IDSlot picks llama.cpp's slot, here the session; -1 or absent is the shared one.
	IDSlot *int `json:"id_slot"`
}

type infillFile struct {
	Filename string `json:"filename"`
	Text     string `json:"text"`
}

// maxExtra bounds input_extra: each chunk costs prompt tokens, and the prefix window keeps only
// the text nearest the caret anyway.
const maxExtra = 64

// infillResponse is llama.cpp's /completion answer, in the fields clients read.
type infillResponse struct {
	Content         string        `json:"content"`
	Stop            bool          `json:"stop"`
	StopType        string        `json:"stop_type,omitempty"`
	StoppingWord    string        `json:"stopping_word"`
	Model           string        `json:"model,omitempty"`
	TokensPredicted int           `json:"tokens_predicted,omitempty"`
	TokensEvaluated int           `json:"tokens_evaluated,omitempty"`
	TokensCached    int           `json:"tokens_cached,omitempty"`
	Truncated       bool          `json:"truncated"`
	Timings         *infillTiming `json:"timings,omitempty"`
}

type infillTiming struct {
	PromptN     int     `json:"prompt_n"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMS float64 `json:"predicted_ms"`
}

func (s *Server) infill(w http.ResponseWriter, r *http.Request) {
	var q infillRequest
	if !s.decode(w, r, &q) {
		return
	}
	if len(q.InputExtra) > maxExtra {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("input_extra is limited to %d chunks", maxExtra))
		return
	}
	// Without repository-level FIM tokens llama.cpp puts the extra context before the prefix
	// as it is; so does Laya, one chunk after another.
	var prefix strings.Builder
	for _, f := range q.InputExtra {
		prefix.WriteString(f.Text)
		if f.Text != "" && !strings.HasSuffix(f.Text, "\n") {
			prefix.WriteByte('\n')
		}
	}
	prefix.WriteString(q.InputPrefix)
	prefix.WriteString(q.Prompt)
	sr := server.Request{Prefix: prefix.String(), Suffix: q.InputSuffix, App: "llama.cpp",
		Temperature: q.Temperature, TopK: q.TopK, TopP: q.TopP, Stop: q.Stop}
	if q.NPredict != nil {
		switch n := *q.NPredict; {
		case n == 0:
			// llama.vscode sends n_predict 0 to warm the cache ahead of the next request:
			// nothing to generate.
			writeJSON(w, http.StatusOK, infillResponse{Stop: true, StopType: "limit", Model: s.opt.ModelName})
			return
		case n > 0:
			sr.MaxTokens = n
		}
		// n < 0, "until done", takes Laya's default, which its stop rules end anyway.
	}
	req, ok := s.request(w, r, sr, "")
	if !ok {
		return
	}
	var onPiece func(string) error
	if q.Stream {
		startEvents(w)
		onPiece = func(t string) error { return event(w, infillResponse{Content: t}) }
	}
	slot := ""
	if q.IDSlot != nil && *q.IDSlot >= 0 {
		slot = strconv.Itoa(*q.IDSlot)
	}
	f, code := s.run(w, r, session("llama", slot), req, onPiece)
	if code != http.StatusOK {
		msg := failure(f)
		if q.Stream {
			event(w, map[string]any{"error": map[string]any{"code": code, "message": msg, "type": "server_error"}})
			return
		}
		s.fail(w, r, code, msg)
		return
	}
	final := infillResponse{Stop: true, StopType: stopType(f.Stop), Model: s.opt.ModelName,
		TokensPredicted: f.Tokens, TokensEvaluated: f.Prompt, TokensCached: f.Reused,
		Truncated: f.Stop == "context",
		Timings:   &infillTiming{PromptN: f.Prompt - f.Reused, PredictedN: f.Tokens, PredictedMS: f.LatencyMS}}
	if q.Stream {
		event(w, final)
		return
	}
	final.Content = f.Text
	writeJSON(w, http.StatusOK, final)
}

// stopType maps Laya's reasons to llama.cpp's: eos, limit (n_predict reached) or word (a stop
// string). Laya's own stop rules (a line, a sentence, the suffix reached, the model unsure)
// end the text as an end of sequence would.
func stopType(stop string) string {
	switch stop {
	case "max_tokens", "context":
		return "limit"
	case "stop":
		return "word"
	}
	return "eos"
}
