package emu

import "testing"

// TestSelf checks every simd and quad collective, barriers and thread attributes of a 2-D grid,
// deadlock detection, simdgroup_matrix loads and products, half/bfloat rounding, the random
// threadgroup order and the fast-math error bounds.
func TestSelf(t *testing.T) {
	if err := selfTest(); err != nil {
		t.Fatal(err)
	}
}
