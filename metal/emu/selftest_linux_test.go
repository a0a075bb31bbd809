package emu

import "testing"

// TestSelf checks every simd and quad collective, barriers and thread attributes of a 2-D grid,
// deadlock detection, simdgroup_matrix loads and products, and half/bfloat rounding.
func TestSelf(t *testing.T) {
	if err := selfTest(); err != nil {
		t.Fatal(err)
	}
}
