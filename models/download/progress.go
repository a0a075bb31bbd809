package download

import "time"

// Progress is a snapshot of a running Pull, for a progress bar or the app's Download menu.
type Progress struct {
	File  string        // the file being transferred
	Done  int64         // bytes of the model on disk so far, including what earlier runs left
	Total int64         // bytes of the whole model
	Rate  float64       // bytes per second over the last few seconds; 0 until known
	ETA   time.Duration // time left at Rate; 0 when Rate is unknown
}

// Fraction is Done/Total in [0, 1].
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 1
	}
	return float64(p.Done) / float64(p.Total)
}

const (
	emitEvery  = 100 * time.Millisecond
	rateWindow = 5 * time.Second
)

type sample struct {
	t    time.Time
	done int64
}

// meter turns byte counts into Progress reports. The rate is measured over a sliding window so
// it follows the connection's current speed and ignores bytes that were already on disk.
type meter struct {
	now      func() time.Time
	emit     func(Progress)
	p        Progress
	ring     [64]sample // samples, one per emitEvery at most: 64 covers rateWindow with room
	head, n  int        // oldest sample, number of samples
	lastEmit time.Time
	fetched  int64 // bytes received, including any later discarded
}

func newMeter(now func() time.Time, emit func(Progress), done, total int64) *meter {
	m := &meter{now: now, emit: emit, p: Progress{Done: done, Total: total}}
	m.record(now())
	return m
}

func (m *meter) startFile(name string) {
	m.p.File = name
	m.report(true)
}

// add counts n new bytes (negative when bytes on disk were discarded).
func (m *meter) add(n int64) {
	m.p.Done += n
	if n > 0 {
		m.fetched += n
	}
	if n < 0 {
		// The window's rate would run backwards; start measuring afresh.
		m.n = 0
		m.record(m.now())
	}
	m.report(false)
}

func (m *meter) report(force bool) {
	t := m.now()
	if !force && t.Sub(m.lastEmit) < emitEvery {
		return
	}
	m.lastEmit = t
	m.record(t)
	old := m.ring[m.head]
	newest := m.ring[(m.head+m.n-1)%len(m.ring)]
	m.p.Rate, m.p.ETA = 0, 0
	if dt := newest.t.Sub(old.t).Seconds(); dt > 0 {
		m.p.Rate = float64(newest.done-old.done) / dt
	}
	if m.p.Rate > 0 {
		m.p.ETA = time.Duration(float64(m.p.Total-m.p.Done) / m.p.Rate * float64(time.Second))
	}
	if m.emit != nil {
		m.emit(m.p)
	}
}

// record appends a sample and drops those older than the window (keeping at least two).
func (m *meter) record(t time.Time) {
	if m.n == len(m.ring) {
		m.head = (m.head + 1) % len(m.ring)
		m.n--
	}
	m.ring[(m.head+m.n)%len(m.ring)] = sample{t, m.p.Done}
	m.n++
	for m.n > 2 && t.Sub(m.ring[m.head].t) > rateWindow {
		m.head = (m.head + 1) % len(m.ring)
		m.n--
	}
}
