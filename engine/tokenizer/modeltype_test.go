package tokenizer

import (
	"strings"
	"testing"
)

// TestUnsupportedModelType: a tokenizer.json of another model kind names its type, rather than
// failing to fit its fields into BPE's (Unigram's vocab is a list of [piece, score] pairs).
func TestUnsupportedModelType(t *testing.T) {
	for typ, model := range map[string]string{
		"Unigram":   `{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0],["▁a",-1.5]]}`,
		"WordPiece": `{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1}}`,
	} {
		_, err := FromJSON([]byte(`{"version":"1.0","model":` + model + `}`))
		if err == nil {
			t.Errorf("%s: loaded", typ)
			continue
		}
		if want := "unsupported model type " + typ; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %q", typ, err, want)
		}
	}
}
