//go:build cgo

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/layaapp/laya/engine/tensor"
)

// levels returns the kernel levels this CPU runs (0 portable, then each SIMD level present) and
// restores the best one when the test ends.
func levels(t testing.TB) []int {
	best := useSIMD(-1)
	t.Cleanup(func() { useSIMD(-1) })
	var ls []int
	for l := 0; l <= best; l++ {
		if useSIMD(l) == l {
			ls = append(ls, l)
		}
	}
	useSIMD(-1)
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = fmt.Sprintf("%d (%s)", l, levelName(l))
	}
	t.Logf("%s: kernel levels %v", runtime.GOARCH, names)
	return ls
}

// levelName names a kernel level (see simdLevel) on this architecture.
func levelName(level int) string {
	if level == 0 {
		return "portable C"
	}
	switch {
	case runtime.GOARCH == "amd64" && level == 1:
		return "AVX2"
	case runtime.GOARCH == "amd64" && level == 2:
		return "AVX-512 VNNI"
	case runtime.GOARCH == "amd64" && level == 3:
		return "AMX"
	case runtime.GOARCH == "arm64" && level == 1:
		return "NEON"
	case runtime.GOARCH == "arm64" && level == 2:
		return "NEON dotprod"
	}
	return fmt.Sprintf("level %d", level)
}

// TestQuantizeMatchesSpec checks every level's activation quantization against the definition:
// d = amax/127 (with pair, the larger amax of blocks 2i and 2i+1), q = round-half-even(x/d),
// sums of each 16, and the Affine-4 even/odd order.
func TestQuantizeMatchesSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	rows, cols := 3, 128
	x := randVec(r, rows*cols)
	copy(x[32:64], make([]float32, 32))          // an all-zero block
	copy(x[cols+64:2*cols], make([]float32, 64)) // an all-zero pair
	for i := range x[2*cols : 2*cols+32] {
		x[2*cols+i] *= 1e-3 // a block far smaller than the other of its pair
	}
	absmax := func(v []float32) (a float32) {
		for _, f := range v {
			a = max(a, float32(math.Abs(float64(f))))
		}
		return a
	}
	for _, l := range levels(t) {
		useSIMD(l)
		for _, mode := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			perm, pair := mode[0], mode[1]
			q := make([]uint32, rows*cols/32*lq8Size/4)
			nb := cols / 32
			xt := make([]float32, 2*rows*nb)
			quantize(x, rows, cols, q, perm, pair, false, make([]float32, cols), xt, make([]int8, rows/8*8*cols))
			raw := unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q)*4)
			for b := 0; b < rows*cols/32; b++ {
				blk := raw[b*lq8Size : (b+1)*lq8Size]
				v := x[32*b : 32*b+32]
				amax := absmax(v)
				if pair {
					amax = max(amax, absmax(x[32*(b^1):32*(b^1)+32]))
				}
				d := math.Float32frombits(uint32(blk[0]) | uint32(blk[1])<<8 | uint32(blk[2])<<16 | uint32(blk[3])<<24)
				if d != amax/127 {
					t.Fatalf("level %d pair %v block %d: d %v, want %v", l, pair, b, d, amax/127)
				}
				var sums [2]int
				for i := range 32 {
					src := i
					if perm {
						src = 2*(i%16) + i/16
					}
					want := 0
					if amax > 0 {
						want = int(math.RoundToEven(float64(v[src] * (127 / amax))))
					}
					if got := int(int8(blk[12+i])); got != want {
						t.Fatalf("level %d perm %v block %d code %d: %d, want %d", l, perm, b, i, got, want)
					}
					sums[i/16] += want
				}
				for h := range 2 {
					if got := int(int16(uint16(blk[8+2*h]) | uint16(blk[9+2*h])<<8)); got != sums[h] {
						t.Fatalf("level %d block %d sum %d: %d, want %d", l, b, h, got, sums[h])
					}
				}
				ds := math.Float32frombits(uint32(blk[4]) | uint32(blk[5])<<8 | uint32(blk[6])<<16 | uint32(blk[7])<<24)
				if want := d * float32(sums[0]+sums[1]); ds != want {
					t.Fatalf("level %d block %d: ds %v, want %v", l, b, ds, want)
				}
				row, col := b/nb, b%nb
				if xt[col*rows+row] != d || xt[(nb+col)*rows+row] != ds {
					t.Fatalf("level %d block %d: transposed scales (%v, %v), want (%v, %v)", l, b, xt[col*rows+row], xt[(nb+col)*rows+row], d, ds)
				}
			}
		}
	}
}

// TestResidualQuantization checks that each residual pair reconstructs its row within
// amax/64516 per element (half a step of the remainder's block scale), that the remainder's
// scale is exactly d/254 of its main block (the kernels combine the two products on that basis)
// and that every level produces the same bytes.
func TestResidualQuantization(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	rows, cols := 2, 64
	x := randVec(r, rows*cols)
	first := map[[2]bool][]uint32{}
	for _, l := range levels(t) {
		useSIMD(l)
		for _, mode := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			perm, pair := mode[0], mode[1]
			q := make([]uint32, 2*rows*cols/32*lq8Size/4)
			quantize(x, rows, cols, q, perm, pair, true, make([]float32, cols), nil, nil)
			if f, ok := first[mode]; !ok {
				first[mode] = q
			} else {
				for i := range q {
					if q[i] != f[i] {
						t.Fatalf("level %d perm %v pair %v: word %d is %#x, level 0 wrote %#x", l, perm, pair, i, q[i], f[i])
					}
				}
			}
			raw := unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q)*4)
			blk := func(row, b int) (float32, []byte) {
				p := raw[(row*cols/32+b)*lq8Size:]
				return math.Float32frombits(uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24), p[12 : 12+32]
			}
			for row := range rows {
				for i := range cols {
					b, e := i/32, i%32
					at := e
					if perm {
						at = (e%2)*16 + e/2
					}
					d1, q1 := blk(2*row, b)
					d2, q2 := blk(2*row+1, b)
					if d2 != d1/254 {
						t.Fatalf("level %d row %d block %d: remainder scale %v, want %v/254", l, row, b, d2, d1)
					}
					got := float64(d1)*float64(int8(q1[at])) + float64(d2)*float64(int8(q2[at]))
					var amax float64
					lo, n := row*cols+32*b, 32 // the block, or with pair the block pair
					if pair {
						lo, n = row*cols+64*(b/2), 64
					}
					for _, v := range x[lo : lo+n] {
						amax = math.Max(amax, math.Abs(float64(v)))
					}
					if d := math.Abs(got - float64(x[row*cols+i])); d > amax/64516*(1+1e-5) {
						t.Fatalf("level %d perm %v row %d col %d: %v reconstructs as %v", l, perm, row, i, x[row*cols+i], got)
					}
				}
			}
		}
	}
}

// TestKernelsAgree runs every dtype through every kernel level with odd row counts, activation
// row counts around the 4-, 8-, 16- and 32-row tiles, 1..3 threads, and with the kernels that need
// transposed scales (decode mat-vecs, prefill tiles) on and off. Levels share the activation quantization
// and their integer block sums are exact, so they may differ only by float summation order;
// all must stay within the quantization bound of the float64 reference.
func TestKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	ls := levels(t)
	t.Cleanup(func() { tile8 = true })
	type kcase struct {
		wc    wcase
		group int // Affine: both group sizes, since 64-groups take the kernels' paired scaling
	}
	var cases []kcase
	for _, wc := range allFormats {
		if wc.dt == tensor.Affine {
			cases = append(cases, kcase{wc, 32}, kcase{wc, 64})
		} else {
			cases = append(cases, kcase{wc, 0})
		}
	}
	for _, kc := range cases {
		wc := kc.wc
		// 26 blocks of 32 (64-groups fit) leave a tail after the 8-block kernels; the legacy
		// formats take an odd 25 (the AMX kernel's block pipeline runs two at a time); K formats
		// need whole 256-blocks.
		e, _ := wc.dt.BlockSize()
		cols := 832
		switch e {
		case 1:
			cols = 83
		case 32:
			cols = 800
		case 256:
			cols = 768
		}
		out := 37
		w := randTensor(r, wc, out, cols)
		for w.GroupSize != kc.group {
			w = randTensor(r, wc, out, cols)
		}
		wd := dequant(t, w)
		for _, nx := range []int{1, 2, 5, 9, 16, 25, 40, 61} {
			x := randVec(r, nx*cols)
			want, mag := refMatMul(wd, x, nil, nx)
			qerrs := map[bool][]float64{
				false: actQuantBound(t, newCPU(t, 1), w, wd, x, nx, false),
				true:  actQuantBound(t, newCPU(t, 1), w, wd, x, nx, true),
			}
			var base []float32
			for _, l := range ls {
				useSIMD(l)
				for threads := 1; threads <= 3; threads++ {
					// The 2-thread runs take the kernels without tiles, the 3-thread ones plain int8.
					tile8 = threads != 2
					c := newCPU(t, threads)
					c.residual = threads != 3
					qerr := qerrs[c.residual]
					name := fmt.Sprintf("%v group %d level %d nx %d threads %d tiles %v residual %v", wc, w.GroupSize, l, nx, threads, tile8, c.residual)
					dst := c.NewBuffer(nx * out)
					c.MatMul(dst, bufOf(c, x), w, nil, nx)
					got := read(t, c, dst)
					for i := range want {
						if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i]+qerr[i]+1e-6 {
							t.Fatalf("%s: out %d = %v, reference %v (bound %g)", name, i, got[i], want[i], 1e-5*mag[i]+qerr[i])
						}
					}
					if !c.residual {
						continue
					}
					if base == nil {
						base = got
						continue
					}
					for i := range got {
						if d := math.Abs(float64(got[i] - base[i])); d > 2e-5*mag[i]+1e-6 {
							t.Fatalf("%s: out %d = %v, level %d gave %v", name, i, got[i], ls[0], base[i])
						}
					}
				}
			}
		}
	}
}

// TestKernelsMatchReferenceTightly removes activation rounding from the comparison: with x made
// of exact int8 multiples of a power of two per block, quantization is lossless and every level
// must equal the float64 reference up to float32 accumulation.
func TestKernelsMatchReferenceTightly(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	ls := levels(t)
	for _, wc := range allFormats {
		cols := 512
		w := randTensor(r, wc, 9, cols)
		wd := dequant(t, w)
		nx := 3
		x := make([]float32, nx*cols)
		for b := 0; b < nx*cols/32; b++ {
			for i := range 32 {
				x[32*b+i] = float32(r.IntN(255)-127) / 64
			}
			x[32*b] = 127.0 / 64 // amax exactly 127 steps, so d = 1/64 and codes are exact
		}
		want, mag := refMatMul(wd, x, nil, nx)
		for _, l := range ls {
			useSIMD(l)
			c := newCPU(t, 2)
			dst := c.NewBuffer(nx * 9)
			c.MatMul(dst, bufOf(c, x), w, nil, nx)
			got := read(t, c, dst)
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i]+1e-6 {
					t.Fatalf("%v level %d: out %d = %v, want %v", wc, l, i, got[i], want[i])
				}
			}
		}
	}
}

func TestAttentionAndSiLUAllLevels(t *testing.T) {
	for _, l := range levels(t) {
		useSIMD(l)
		t.Run(fmt.Sprintf("level%d", l), func(t *testing.T) {
			TestAttentionGQA(t)
			TestAttentionShapes(t)
			TestElementwise(t)
			TestAttentionWindow(t)
			TestNormOffsetAndGELU(t)
			TestGELUMulLong(t)
		})
	}
}

// BenchmarkMatMat128 runs every SIMD level this CPU has, side by side.
func BenchmarkMatMat128(b *testing.B) {
	for _, l := range levels(b) {
		if l == 0 {
			continue
		}
		b.Run(fmt.Sprintf("level%d", l), func(b *testing.B) {
			useSIMD(l)
			benchMatMul(b, 128)
		})
	}
}
