package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layaapp/laya/app/controller"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func shown(app string, ms int) controller.Event {
	return controller.Event{Kind: controller.Shown, App: app, Latency: time.Duration(ms) * time.Millisecond}
}

func TestRecordSaveOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "laya", "stats.json")
	s, err := Open(path, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		s.Record(shown("com.apple.TextEdit", i*5)) // 5..100 ms
	}
	s.Record(shown("com.microsoft.VSCode", 300))
	s.Record(controller.Event{Kind: controller.Accepted, App: "com.apple.TextEdit", Chars: 12})
	s.Record(controller.Event{Kind: controller.AcceptedWord, App: "com.apple.TextEdit", Chars: 5})
	s.Record(controller.Event{Kind: controller.Dismissed, App: "com.apple.TextEdit"})
	s.Record(controller.Event{Kind: controller.Failed, App: "com.apple.TextEdit"})

	tot := s.Snapshot("")
	if tot.Shown != 21 || tot.AcceptedAll != 1 || tot.AcceptedWord != 1 || tot.CharsSaved != 11+4 {
		t.Errorf("totals %+v", tot)
	}
	te := s.Snapshot("com.apple.TextEdit")
	if p50, p95 := te.Percentile(50), te.Percentile(95); p50 != 50 || p95 != 95 {
		t.Errorf("TextEdit p50 %v p95 %v, want 50 and 95", p50, p95)
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	back, err := Open(path, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Snapshot(""); got.Shown != 21 || got.CharsSaved != 15 || len(got.LatencyMS) != 21 {
		t.Errorf("read back %+v", got)
	}
	lines := strings.Join(back.Lines(3), "\n")
	for _, want := range []string{"Since 3 Dec 2026", "Shown 21 · accepted 2 (whole 1, by word 1)", "Characters saved 15",
		"com.apple.TextEdit: shown 20, accepted 2, saved 15, p50 50 ms", "com.microsoft.VSCode: shown 1"} {
		if !strings.Contains(lines, want) {
			t.Errorf("menu lines lack %q:\n%s", want, lines)
		}
	}
	// No temporary files are left next to it.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries", len(ents))
	}

	back.Reset(t0.Add(2 * time.Hour))
	if err := back.Save(); err != nil {
		t.Fatal(err)
	}
	again, _ := Open(path, t0)
	if got := again.Snapshot(""); got.Shown != 0 || len(again.Lines(3)) != 3 {
		t.Errorf("after reset %+v %q", got, again.Lines(3))
	}
}

func TestBounded(t *testing.T) {
	s, _ := Open(filepath.Join(t.TempDir(), "s.json"), t0)
	for i := 0; i < 3*maxSamples; i++ {
		s.Record(shown("a", i))
	}
	for i := 0; i < maxApps+50; i++ {
		s.Record(shown(fmt.Sprintf("app%d", i), 1))
	}
	if n := len(s.Snapshot("a").LatencyMS); n != maxSamples {
		t.Errorf("%d latency samples kept", n)
	}
	if s.Snapshot("a").LatencyMS[0] != float64(2*maxSamples) {
		t.Error("the oldest samples were not the ones dropped")
	}
	s.mu.Lock()
	apps := len(s.f.Apps)
	s.mu.Unlock()
	if apps > maxApps+1 || s.Snapshot(Other).Shown == 0 {
		t.Errorf("%d apps kept; other shown %d", apps, s.Snapshot(Other).Shown)
	}
}

func TestDamagedFile(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"garbage":  "{not json",
		"negative": `{"total":{"shown":-4}}`,
		"huge":     `{"total":{"latency_ms":[` + strings.Repeat("1,", maxSamples+1) + `1]}}`,
		"too big":  strings.Repeat(" ", maxFileBytes+1),
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(data), 0o600)
		s, err := Open(path, t0)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if s == nil || s.Snapshot("").Shown != 0 {
			t.Errorf("%s: did not start over", name)
		}
	}
}
