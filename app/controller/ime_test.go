package controller

import (
	"strings"
	"testing"

	"github.com/layaapp/laya/config"
)

func TestNoCaptureWhileComposing(t *testing.T) {
	cfg := config.Default()
	r := newRig(t, cfg, newElem("a.b", 1, "私は", ""))
	r.fields.setComposing(true)
	r.c.Hotkey()
	if e := r.until(Refused); !strings.Contains(e.Reason, "input method") {
		t.Errorf("refused for %q", e.Reason)
	}
	r.noCall()

	r.fields.setComposing(false)
	r.c.Hotkey()
	r.call()
}

func TestNoSuggestionWhenCompositionStarts(t *testing.T) {
	r := newRig(t, config.Default(), newElem("a.b", 1, "私は", ""))
	r.c.Hotkey()
	c := r.call()
	// The user switches to an input method while the model runs; the field is unchanged.
	r.fields.setComposing(true)
	r.piece(c, "今日")
	c.reply <- engineReply{text: "今日は"}
	r.until(Canceled)
	if _, shows := r.ov.state(); len(shows) != 0 {
		t.Errorf("suggestion shown over an input method's composition: %+v", shows)
	}
}
