//go:build darwin && arm64

package metal

import "testing"

// BenchmarkDecodeStepTinyLlama times one decode step, at context 512, of a model shaped like
// TinyLlama-1.1B in MLX 4-bit (zero weights: the time does not depend on their values) on the
// GPU, end to end from recording to the finished command buffer: the number the README's budget
// estimates.
func BenchmarkDecodeStepTinyLlama(b *testing.B) {
	dev, err := OpenDevice()
	if err != nil {
		b.Fatal(err)
	}
	m := newStepModelOn(b, dev, stepShape{layers: 22, dim: 2048, ffn: 5632, heads: 32, kvHeads: 4, headDim: 64, vocab: 32000, context: 2048})
	defer m.be.Close()
	const pos = 511
	for p := 0; p < pos; p++ {
		if err := m.step(p); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		m.cache.Truncate(pos)
		if err := m.step(pos); err != nil {
			b.Fatal(err)
		}
	}
}
