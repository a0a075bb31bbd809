package controller

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdleUnload(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	var unloads atomic.Int32
	idle := NewIdle(clock, 10*time.Minute, func() { unloads.Add(1) })

	clock.Advance(time.Hour)
	if unloads.Load() != 0 {
		t.Fatal("unloaded a model that was never loaded")
	}
	idle.Used() // loaded
	clock.Advance(9 * time.Minute)
	idle.Used() // a request: the ten minutes start over
	clock.Advance(9 * time.Minute)
	if unloads.Load() != 0 || !idle.Loaded() {
		t.Fatal("unloaded before ten quiet minutes")
	}
	clock.Advance(time.Minute)
	if unloads.Load() != 1 || idle.Loaded() {
		t.Fatalf("after ten quiet minutes: %d unloads, loaded=%v", unloads.Load(), idle.Loaded())
	}
	clock.Advance(time.Hour)
	if unloads.Load() != 1 {
		t.Error("unloaded twice")
	}

	// The next request reloads; memory pressure releases at once, once.
	idle.Used()
	idle.Pressure()
	idle.Pressure()
	clock.Advance(time.Hour)
	if unloads.Load() != 2 {
		t.Errorf("memory pressure: %d unloads, want 2", unloads.Load())
	}

	// 0 never unloads on a timer; a later setting applies to the loaded model.
	idle.SetAfter(0)
	idle.Used()
	clock.Advance(48 * time.Hour)
	if unloads.Load() != 2 {
		t.Error("unloaded with the timer off")
	}
	idle.SetAfter(time.Minute)
	clock.Advance(time.Minute)
	if unloads.Load() != 3 {
		t.Errorf("new quiet spell not applied: %d unloads", unloads.Load())
	}
}
