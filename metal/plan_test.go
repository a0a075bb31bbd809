package metal

import (
	"testing"
)

// TestCounterStep counts a 2-layer decode step at position 5 and checks every total against
// sums worked out from the shapes by hand.
func TestCounterStep(t *testing.T) {
	dev := NewCounter()
	sh := smallShape(2)
	sh.context = 64
	m := newStepModelOn(t, dev, sh)
	for pos := range 6 {
		before := dev.Counts()
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
		got := dev.Counts().Sub(before)
		// 4-bit affine, group 64, f16 scales and biases: 0.5 + 4/64 bytes per weight.
		aff := func(rows, cols int) int64 { return int64(rows) * int64(cols/2+2*2*cols/64) }
		dim, ffn, qd, kvd, vocab := sh.dim, sh.ffn, sh.heads*sh.headDim, sh.kvHeads*sh.headDim, sh.vocab
		layer := aff(qd, dim) + 2*aff(kvd, dim) + aff(dim, qd) + 2*aff(ffn, dim) + aff(dim, ffn) + 2*4*int64(dim)
		wantW := 2*layer + aff(1, dim) + 4*int64(dim) + aff(vocab, dim)
		// Keys and values of positions 0..pos read, those of pos written, both half.
		wantKV := 2 * int64(2*2*kvd*(pos+1)+2*2*kvd)
		// Per layer 6 dispatches, each using what the one before wrote (a barrier before each
		// but the first); then the head with the final norm folded in.
		want := PlanCounts{Dispatches: 6*2 + 2, Barriers: 6*2 + 1, Commits: 1, HostWaits: 1, WeightBytes: wantW, KVBytes: wantKV}
		got.ActivationBytes = 0
		if got != want {
			t.Errorf("position %d:\n got %+v\nwant %+v", pos, got, want)
		}
	}
}

// TestParamsView checks that params reads the words encode wrote, field by field.
func TestParamsView(t *testing.T) {
	var pl plan
	p := mslMatVecsParams{w: mslWeight{fmt: 1, rows: 2, cols: 3, rowBytes: 4, bits: 5, groupSize: 6, scaleDT: 7}, rows0: 8,
		rows1: 9, rows2: 10, hasBias: 11, biasDT0: 12, biasDT1: 13, biasDT2: 14, addTo: 15,
		norm: mslNormParams{on: 16, dt: 17, eps: 0.25, offset: 19}}
	var a0 Arg
	pl.encMatvecsF32(groups1(1, 1), mvThreads, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, a0, &p)
	if got := *params[mslMatVecsParams](&pl.ds[0]); got != p {
		t.Errorf("params view %+v, want %+v", got, p)
	}
	a := mslAttnParams{rows: 1, heads: 2, kvHeads: 3, headDim: 4, scale: 0.5, window: 6, kvHalf: 7, pairs: 8, style: 9, splits: 10}
	pl.encAttentionDecode(groups1(1, 1), mvThreads, a0, a0, a0, a0, a0, a0, a0, &a)
	if got := *params[mslAttnParams](&pl.ds[1]); got != a {
		t.Errorf("params view %+v, want %+v", got, a)
	}
}
