package engine

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// A recurrent state cannot be rewound: after a prompt that differs from the cached tokens at
// position n, a model with recurrent layers would have to start over. Sessions of such models
// keep copies of the state (snapshots) at reuse points instead: every snapshotEvery positions
// during prefill, at the last prompt token and the one before it (typing usually changes or
// extends the prompt's last token), and at the end of each request. A new prompt resumes from
// the latest snapshot at or before its common prefix with the cached tokens.

// snapshotEvery is the spacing of prefill snapshots: a multiple of maxRows, so that prefill
// chunks of a resumed run fall where a cold run's do, and of the delta rule's chunk, so that
// they round alike.
const snapshotEvery = maxRows

// maxSnapshots bounds the snapshots a session keeps; each is the size of the recurrent state.
const maxSnapshots = 6

type snapshot struct {
	pos int // the state after tokens [0, pos)
	st  *recState
}

// snapshots are one session's snapshots, sorted by position, and the allocated states not in
// use. Their methods run backend operations and take m.mu.
type snapshots struct {
	m    *Model
	live []snapshot
	free []*recState
	// bytes is the memory of every state allocated for snapshots, read without the session's lock.
	bytes atomic.Int64
}

func newSnapshots(m *Model) *snapshots {
	return &snapshots{m: m, live: make([]snapshot, 0, maxSnapshots+1)}
}

// save keeps a copy of cur, the state after pos tokens. Past maxSnapshots it drops the snapshot
// whose loss leaves the smallest gap between those that stay (never the latest), and reuses its
// memory; that may be the new one, which is then not kept.
func (sn *snapshots) save(cur *recState, pos int) error {
	i := 0
	for i < len(sn.live) && sn.live[i].pos < pos {
		i++
	}
	if i < len(sn.live) && sn.live[i].pos == pos {
		return nil // the same tokens lead there, so the same state
	}
	sn.live = slices.Insert(sn.live, i, snapshot{pos: pos})
	var st *recState
	if len(sn.live) > maxSnapshots {
		drop := sn.thinnest()
		if drop == i {
			sn.live = slices.Delete(sn.live, i, i+1)
			return nil
		}
		st = sn.live[drop].st
		sn.live = slices.Delete(sn.live, drop, drop+1)
		if drop < i {
			i--
		}
	} else if n := len(sn.free); n > 0 {
		st, sn.free = sn.free[n-1], sn.free[:n-1]
	}
	m := sn.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if st == nil && !m.closed {
		st = m.newRecState()
		sn.bytes.Add(int64(st.floats) * 4)
	}
	var err error
	if m.closed {
		err = errClosed
	} else {
		m.copyState(st, cur)
		err = m.be.Sync()
	}
	if err != nil {
		sn.live = slices.Delete(sn.live, i, i+1)
		if st != nil {
			sn.free = append(sn.free, st)
		}
		return err
	}
	sn.live[i].st = st
	return nil
}

// thinnest is the index of the snapshot, other than the latest, whose neighbours are closest.
func (sn *snapshots) thinnest() int {
	drop, gap := 0, -1
	for j := range len(sn.live) - 1 {
		prev := 0
		if j > 0 {
			prev = sn.live[j-1].pos
		}
		if g := sn.live[j+1].pos - prev; gap < 0 || g < gap {
			drop, gap = j, g
		}
	}
	return drop
}

// restore puts into cur the latest snapshot at or before position n and returns its position, 0
// (an empty state) when there is none. Snapshots past the returned position are dropped: the
// tokens after it are about to change.
func (sn *snapshots) restore(cur *recState, n int) (int, error) {
	i := len(sn.live) - 1
	for i >= 0 && sn.live[i].pos > n {
		i--
	}
	for _, s := range sn.live[i+1:] {
		sn.free = append(sn.free, s.st)
	}
	sn.live = sn.live[:i+1]
	if i < 0 {
		return 0, nil
	}
	s := sn.live[i]
	m := sn.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed
	}
	m.copyState(cur, s.st)
	return s.pos, m.be.Sync()
}

// reset forgets every snapshot, keeping their memory for later ones.
func (sn *snapshots) reset() {
	for _, s := range sn.live {
		sn.free = append(sn.free, s.st)
	}
	sn.live = sn.live[:0]
}

// snapshotPoint reports whether a session keeps a snapshot after pos tokens of a prompt of
// promptLen: every snapshotEvery positions, and at the prompt's last two tokens.
func (s *Session) snapshotPoint(pos, promptLen int) bool {
	return pos%snapshotEvery == 0 || pos == promptLen-1 || pos == promptLen
}

// snapshotChunk is how many of the rest prompt tokens the next prefill pass takes: at most
// maxRows, ending at the next snapshot point.
func (s *Session) snapshotChunk(rest, promptLen int) int {
	pos := len(s.tokens)
	n := min(rest, maxRows, snapshotEvery-pos%snapshotEvery)
	if end := promptLen - 1; pos < end && pos+n > end {
		n = end - pos
	}
	return n
}

// save keeps a snapshot of the session's recurrent state after its tokens.
func (s *Session) save() error {
	_, st := splitCache(s.cache)
	if err := s.snaps.save(st, len(s.tokens)); err != nil {
		s.reset()
		return fmt.Errorf("engine: keeping a recurrent state: %w", err)
	}
	return nil
}
