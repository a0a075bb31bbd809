package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/layaapp/laya/complete"
	"github.com/layaapp/laya/engine"
)

// The whole chain with the bundled model: HTTP, each protocol, completer, engine; and the
// next request of a protocol finds its cache, on a new connection (do opens one per request).
func TestBundledModelOverHTTP(t *testing.T) {
	m, err := engine.Load("../../assets/models/laya-code", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	comp := complete.New(m, complete.Options{})
	defer comp.Close()
	url := start(t, comp, Options{Key: testKey})

	_, body, _ := do(t, "POST", url+"/v1/completions", `{"prompt":"import numpy as ","max_tokens":8}`)
	var oa struct{ Choices []struct{ Text string } }
	if err := json.Unmarshal([]byte(body), &oa); err != nil || len(oa.Choices) != 1 || oa.Choices[0].Text != "np" {
		t.Errorf("/v1/completions: %s", body)
	}
	do(t, "POST", url+"/infill", `{"input_prefix":"import numpy as np\n","prompt":"import ","input_suffix":"","n_predict":8}`)
	_, body, _ = do(t, "POST", url+"/infill", `{"input_prefix":"import numpy as np\n","prompt":"import numpy as ","input_suffix":"","n_predict":8}`)
	var in struct {
		Content      string
		TokensCached int `json:"tokens_cached"`
	}
	if err := json.Unmarshal([]byte(body), &in); err != nil || in.Content != "np" || in.TokensCached == 0 {
		t.Errorf("/infill: %s", body)
	}
	_, body, _ = do(t, "POST", url+"/api/generate", `{"model":"laya","prompt":"import numpy as ","stream":false,"options":{"num_predict":8}}`)
	var ol struct {
		Response string
		Done     bool
	}
	if err := json.Unmarshal([]byte(body), &ol); err != nil || ol.Response != "np" || !ol.Done {
		t.Errorf("/api/generate: %s", body)
	}
}
