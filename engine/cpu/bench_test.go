package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// Weight matrices of TinyLlama's FFN (5632 x 2048). Mat-vec is the decode step, bound by memory
// bandwidth (SetBytes reports weight bytes streamed per op); mat-mat with 128 rows is prefill.
var benchFormats = []wcase{{tensor.Q4_0, 0}, {tensor.Affine, 4}, {tensor.Q8_0, 0}, {tensor.Q4_K, 0},
	{tensor.Q6_K, 0}, {tensor.F16, 0}}

func benchMatMul(b *testing.B, rows int) {
	for _, mode := range []string{"precise", "int8"} {
		for _, wc := range benchFormats {
			b.Run(mode+"/"+wc.String(), func(b *testing.B) { benchMatMulOne(b, rows, wc, mode == "precise") })
		}
	}
}

// benchMatMulOne runs on 2 threads, as the speed targets do.
func benchMatMulOne(b *testing.B, rows int, wc wcase, precise bool) {
	r := rand.New(rand.NewPCG(1, 2))
	w := randTensor(r, wc, 5632, 2048)
	if wc.dt == tensor.Affine {
		w = randTensorGroup(r, 5632, 2048, 64)
	}
	c := newCPU(b, 2)
	c.residual = precise
	x := bufOf(c, randVec(r, rows*2048))
	dst := c.NewBuffer(rows * 5632)
	c.MatMul(dst, x, w, nil, rows)
	b.SetBytes(int64(len(w.Data)))
	b.ResetTimer()
	for range b.N {
		c.MatMul(dst, x, w, nil, rows)
	}
	if err := c.Sync(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// randTensorGroup is a 4-bit Affine tensor with F16 scales and a fixed group, as MLX writes them.
func randTensorGroup(r *rand.Rand, rows, cols, group int) *tensor.Tensor {
	for {
		t := randTensor(r, wcase{tensor.Affine, 4}, rows, cols)
		if t.GroupSize == group && t.Scales.DType == tensor.F16 {
			return t
		}
	}
}

func BenchmarkMatVec(b *testing.B) { benchMatMul(b, 1) }

func BenchmarkAttentionDecode(b *testing.B) {
	for _, ctx := range []int{256, 1024} {
		b.Run(fmt.Sprint(ctx), func(b *testing.B) {
			benchAttention(b, ctx)
		})
	}
}

// BenchmarkAttentionPrefill times the attention of a 128-token prefill of one TinyLlama layer
// on 2 threads.
func BenchmarkAttentionPrefill(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	c := newCPU(b, 2)
	cache := c.NewKVCache(backend.AttnShape{Layers: 1, Heads: 32, KVHeads: 4, HeadDim: 64, Context: 128})
	q, k, v := bufOf(c, randVec(r, 128*2048)), bufOf(c, randVec(r, 128*256)), bufOf(c, randVec(r, 128*256))
	out := c.NewBuffer(128 * 2048)
	b.ResetTimer()
	for range b.N {
		cache.Truncate(0)
		attend(c, out, q, k, v, cache, 0, 0, 128, 0)
	}
	if err := c.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDecodeMatVecs runs the mat-vecs of one TinyLlama decode step: 22 layers of Q4_0
// q, k, v, o, gate, up and down plus the output head, each with its own weights (555 MB, so they
// stream from DRAM as in decode). Against `laya bench`'s decode ms/token it shows how much of a
// step is outside the kernels.
func BenchmarkDecodeMatVecs(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	q40 := func(rows, cols int) *tensor.Tensor {
		t := &tensor.Tensor{Name: "w", DType: tensor.Q4_0, Shape: []int{rows, cols}, Data: make([]byte, rows*cols/32*18)}
		for i := range t.Data {
			t.Data[i] = byte(r.Uint32())
		}
		for i := 0; i < len(t.Data); i += 18 {
			t.Data[i], t.Data[i+1] = 0, 0x20 // scale 2^-7: finite, not subnormal
		}
		return t
	}
	var ws []*tensor.Tensor
	var bytes int64
	for range 22 {
		for _, s := range [][2]int{{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}} {
			ws = append(ws, q40(s[0], s[1]))
		}
	}
	ws = append(ws, q40(32000, 2048))
	for _, w := range ws {
		bytes += int64(len(w.Data))
	}
	for _, mode := range []string{"precise", "int8"} {
		b.Run(mode, func(b *testing.B) {
			c := newCPU(b, 0)
			c.residual = mode == "precise"
			x := bufOf(c, randVec(r, 5632))
			dst := c.NewBuffer(32000)
			b.SetBytes(bytes)
			for range b.N {
				for _, w := range ws {
					c.MatMul(dst, x, w, nil, 1)
				}
			}
			if err := c.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkPrefillShapes runs a 128-token prefill's matmuls shape by shape (TinyLlama: q and o
// 2048x2048, k and v 256x2048, gate and up 5632x2048, down 2048x5632) for Q4_0 and MLX 4-bit
// (groups of 64, F16 scales, as MLX writes them) on 2 threads at the best SIMD level, so that a
// format slower than another in a whole prefill shows in which matrix.
func BenchmarkPrefillShapes(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, mode := range []string{"precise", "int8"} {
		for _, wc := range []wcase{{tensor.Q4_0, 0}, {tensor.Affine, 4}} {
			for _, s := range [][2]int{{2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}} {
				w := randTensor(r, wc, s[0], s[1])
				if wc.dt == tensor.Affine {
					w = randTensorGroup(r, s[0], s[1], 64)
				}
				b.Run(fmt.Sprintf("%s/%v/%dx%d", mode, wc, s[0], s[1]), func(b *testing.B) {
					c := newCPU(b, 2)
					c.residual = mode == "precise"
					x := bufOf(c, randVec(r, 128*s[1]))
					dst := c.NewBuffer(128 * s[0])
					c.MatMul(dst, x, w, nil, 128)
					b.ResetTimer()
					for range b.N {
						c.MatMul(dst, x, w, nil, 128)
					}
					if err := c.Sync(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(s[0])*float64(s[1])*128*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}
