// Package stats keeps Laya's usage statistics on this Mac: suggestions shown and accepted, the
// characters they saved, how long they took to appear, overall and per app. They live in one
// local file, written atomically, shown in the menu and never sent anywhere.
package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/layaapp/laya/app/controller"
	"github.com/layaapp/laya/internal/fsutil"
)

// Bounds on what is kept, and on what is read back from the file.
const (
	maxSamples   = 256     // latencies kept per app and overall, the newest
	maxApps      = 200     // apps counted separately; the rest count as Other
	maxFileBytes = 1 << 20 // a stats file larger than this is not read
	Other        = "other"
)

// Counts are the statistics of one app, or of all.
type Counts struct {
	Shown        int `json:"shown"`
	AcceptedAll  int `json:"accepted_all"`
	AcceptedWord int `json:"accepted_word"`
	// CharsSaved is the characters accepted minus the key presses that accepted them.
	CharsSaved int `json:"chars_saved"`
	// LatencyMS are the newest hotkey-or-pause to suggestion-on-screen times.
	LatencyMS []float64 `json:"latency_ms"`
}

// Percentile returns the p-th percentile (0–100) of c's latencies in milliseconds, by the
// nearest-rank method, or 0 without any.
func (c *Counts) Percentile(p float64) float64 {
	if len(c.LatencyMS) == 0 {
		return 0
	}
	s := slices.Clone(c.LatencyMS)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func (c *Counts) record(e controller.Event) {
	switch e.Kind {
	case controller.Shown:
		c.Shown++
		c.LatencyMS = append(c.LatencyMS, float64(e.Latency.Microseconds())/1000)
		if n := len(c.LatencyMS); n > maxSamples {
			c.LatencyMS = append(c.LatencyMS[:0], c.LatencyMS[n-maxSamples:]...)
		}
	case controller.Accepted:
		c.AcceptedAll++
		c.CharsSaved += max(e.Chars-1, 0)
	case controller.AcceptedWord:
		c.AcceptedWord++
		c.CharsSaved += max(e.Chars-1, 0)
	}
}

// file is the stored form.
type file struct {
	Since time.Time          `json:"since"`
	Total Counts             `json:"total"`
	Apps  map[string]*Counts `json:"apps"`
}

// Stats are the statistics kept in one file. Methods are safe for concurrent use.
type Stats struct {
	path string

	mu    sync.Mutex
	f     file
	dirty bool
}

// Open reads the statistics at path. A missing file starts empty; a damaged one too, with an
// error saying so, and is replaced on the next Save.
func Open(path string, now time.Time) (*Stats, error) {
	s := &Stats{path: path, f: file{Since: now, Apps: map[string]*Counts{}}}
	data, err := fsutil.ReadFileLimit(path, maxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if errors.Is(err, fsutil.ErrTooLarge) {
		return s, fmt.Errorf("stats: %w; starting over", err)
	}
	if err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return s, fmt.Errorf("stats: %s: %w; starting over", path, err)
	}
	if f.Apps == nil {
		f.Apps = map[string]*Counts{}
	}
	if len(f.Apps) > maxApps+1 {
		return s, fmt.Errorf("stats: %s lists %d apps; starting over", path, len(f.Apps))
	}
	for _, c := range slices.AppendSeq([]*Counts{&f.Total}, maps.Values(f.Apps)) {
		if c == nil || c.Shown < 0 || c.AcceptedAll < 0 || c.AcceptedWord < 0 || c.CharsSaved < 0 || len(c.LatencyMS) > maxSamples {
			return s, fmt.Errorf("stats: %s has impossible counts; starting over", path)
		}
	}
	s.f = f
	return s, nil
}

// Record counts a controller event.
func (s *Stats) Record(e controller.Event) {
	switch e.Kind {
	case controller.Shown, controller.Accepted, controller.AcceptedWord:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	app := e.App
	if app == "" {
		app = Other
	}
	c := s.f.Apps[app]
	if c == nil {
		if len(s.f.Apps) >= maxApps {
			app = Other
			c = s.f.Apps[app]
		}
		if c == nil {
			c = &Counts{}
			s.f.Apps[app] = c
		}
	}
	c.record(e)
	s.f.Total.record(e)
	s.dirty = true
}

// Reset forgets everything, from now on.
func (s *Stats) Reset(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = file{Since: now, Apps: map[string]*Counts{}}
	s.dirty = true
}

// Save writes the file if anything changed since the last Save, atomically, so a crash leaves
// the old or the new statistics, never half of either.
func (s *Stats) Save() error {
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	data, err := json.MarshalIndent(s.f, "", "  ")
	s.dirty = false
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	if err := fsutil.WriteFileAtomic(s.path, data); err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return fmt.Errorf("stats: %w", err)
	}
	return nil
}

// Lines describes the statistics for the menu: totals, latency, then the apps with the most
// accepted suggestions (at most top of them).
func (s *Stats) Lines(top int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.f.Total
	lines := []string{
		fmt.Sprintf("Since %s", s.f.Since.Format("2 Jan 2006")),
		fmt.Sprintf("Shown %d · accepted %d (whole %d, by word %d)", t.Shown, t.AcceptedAll+t.AcceptedWord, t.AcceptedAll, t.AcceptedWord),
		fmt.Sprintf("Characters saved %d", t.CharsSaved),
	}
	if len(t.LatencyMS) > 0 {
		lines = append(lines, fmt.Sprintf("Latency p50 %.0f ms · p95 %.0f ms", t.Percentile(50), t.Percentile(95)))
	}
	apps := make([]string, 0, len(s.f.Apps))
	for a := range s.f.Apps {
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool {
		ci, cj := s.f.Apps[apps[i]], s.f.Apps[apps[j]]
		if ai, aj := ci.AcceptedAll+ci.AcceptedWord, cj.AcceptedAll+cj.AcceptedWord; ai != aj {
			return ai > aj
		}
		return apps[i] < apps[j]
	})
	for _, a := range apps[:min(top, len(apps))] {
		c := s.f.Apps[a]
		line := fmt.Sprintf("%s: shown %d, accepted %d, saved %d", a, c.Shown, c.AcceptedAll+c.AcceptedWord, c.CharsSaved)
		if len(c.LatencyMS) > 0 {
			line += fmt.Sprintf(", p50 %.0f ms", c.Percentile(50))
		}
		lines = append(lines, line)
	}
	return lines
}

// Snapshot returns a copy of the counts of app ("" for the total).
func (s *Stats) Snapshot(app string) Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.f.Total
	if app != "" {
		if c = s.f.Apps[app]; c == nil {
			return Counts{}
		}
	}
	out := *c
	out.LatencyMS = slices.Clone(c.LatencyMS)
	return out
}
