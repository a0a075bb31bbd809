package completion

import (
	"strings"
	"testing"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/complete"
)

func TestRequest(t *testing.T) {
	r := controller.Request{Prefix: "def f(", Suffix: ")\n", App: "com.apple.dt.Xcode", MaxTokens: 24,
		Temperature: 0.3, TopK: 12, TopP: 0.9}
	got, err := Request(r)
	if err != nil {
		t.Fatal(err)
	}
	want := complete.Request{Prefix: "def f(", Suffix: ")\n", App: "com.apple.dt.Xcode", MaxTokens: 24,
		Temperature: 0.3, TopK: 12, TopP: 0.9}
	if got.Prefix != want.Prefix || got.Suffix != want.Suffix || got.App != want.App || got.MaxTokens != want.MaxTokens ||
		got.Temperature != want.Temperature || got.TopK != want.TopK || got.TopP != want.TopP || got.Stop != nil {
		t.Errorf("Request(%+v) = %+v, want %+v", r, got, want)
	}
	// The socket's refusals apply to the app's requests too.
	for _, bad := range []controller.Request{{MaxTokens: -1}, {TopP: 1.5}, {App: strings.Repeat("a", 1<<12)}} {
		if _, err := Request(bad); err == nil {
			t.Errorf("Request(%+v) accepted", bad)
		}
	}
}
