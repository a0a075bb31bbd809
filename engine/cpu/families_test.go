package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/layaapp/laya/engine/backend"
)

// refWindowAttention is attention over keys (p-window, p] only, scaled by scale.
func refWindowAttention(q, ks, vs []float32, heads, kvHeads, hd, pos, rows, window int, scale float64) []float64 {
	out := make([]float64, rows*heads*hd)
	kvw := kvHeads * hd
	for r := range rows {
		first := max(0, pos+r+1-window)
		for h := range heads {
			kh := h / (heads / kvHeads)
			var s []float64
			m := math.Inf(-1)
			for t := first; t <= pos+r; t++ {
				var d float64
				for i := range hd {
					d += float64(q[(r*heads+h)*hd+i]) * float64(ks[t*kvw+kh*hd+i])
				}
				s = append(s, d*scale)
				m = math.Max(m, d*scale)
			}
			var z float64
			for i := range s {
				s[i] = math.Exp(s[i] - m)
				z += s[i]
			}
			for i, e := range s {
				t := first + i
				for d := range hd {
					out[(r*heads+h)*hd+d] += e / z * float64(vs[t*kvw+kh*hd+d])
				}
			}
		}
	}
	return out
}

// TestAttentionWindow checks sliding-window attention with a given scale on prefill blocks and
// decode steps. Keys older than every window are enormous, so reading one would swamp the
// output: the test also shows they are not read.
func TestAttentionWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const heads, kvHeads, hd, window = 4, 2, 20, 6
	for threads := 1; threads <= 2; threads++ {
		c := newCPU(t, threads)
		s := backend.AttnShape{Layers: 1, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Context: 64, Scale: 0.3}
		cache := c.NewKVCache(s)
		qw, kvw := heads*hd, kvHeads*hd
		var ks, vs []float32
		pos := 0
		for step, rows := range []int{11, 1, 1, 7, 1} {
			q, k, v := randVec(r, rows*qw), randVec(r, rows*kvw), randVec(r, rows*kvw)
			if step == 0 {
				for i := range 3 * kvw { // positions 0-2: outside every later window
					k[i], v[i] = 1e20, 1e20
				}
			}
			ks, vs = append(ks, k...), append(vs, v...)
			out := c.NewBuffer(rows * qw)
			attend(c, out, bufOf(c, q), bufOf(c, k), bufOf(c, v), cache, 0, pos, rows, window)
			got := read(t, c, out)
			want := refWindowAttention(q, ks, vs, heads, kvHeads, hd, pos, rows, window, 0.3)
			for i := range want {
				if step > 0 && math.Abs(float64(got[i])-want[i]) > 1e-5 {
					t.Fatalf("threads %d step %d: out %d = %v, want %v", threads, step, i, got[i], want[i])
				}
			}
			pos += rows
		}
	}
}

// TestRopePartial checks that a rope with fewer frequencies than HeadDim/2 rotates the leading
// dimensions (pairing i with i+len(InvFreq) in half style) and leaves the rest untouched.
func TestRopePartial(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const hd, pairs, heads, rows, pos = 16, 3, 2, 3, 5
	inv := []float32{1, 0.1, 0.01}
	for _, style := range []backend.RopeStyle{backend.RopeHalf, backend.RopeInterleaved} {
		c := newCPU(t, 1)
		x := randVec(r, rows*heads*hd)
		got := rotated(t, c, x, rows, heads, pos, &backend.Rope{HeadDim: hd, Style: style, InvFreq: inv})
		for row := range rows {
			for h := range heads {
				o := (row*heads + h) * hd
				want := make([]float64, hd)
				for i := range hd {
					want[i] = float64(x[o+i])
				}
				for i := range pairs {
					a, bi := i, i+pairs
					if style == backend.RopeInterleaved {
						a, bi = 2*i, 2*i+1
					}
					ang := float64(pos+row) * float64(inv[i])
					x0, x1 := float64(x[o+a]), float64(x[o+bi])
					want[a] = x0*math.Cos(ang) - x1*math.Sin(ang)
					want[bi] = x1*math.Cos(ang) + x0*math.Sin(ang)
				}
				for i := range hd {
					if i >= 2*pairs && got[o+i] != x[o+i] || math.Abs(float64(got[o+i])-want[i]) > 1e-5 {
						t.Fatalf("style %d row %d head %d dim %d: %v, want %v", style, row, h, i, got[o+i], want[i])
					}
				}
			}
		}
	}
}

// TestNormOffsetAndGELU checks Gemma's (1+w) RMSNorm and the GELU-tanh gate against PyTorch's
// values of gelu(x, approximate="tanh").
func TestNormOffsetAndGELU(t *testing.T) {
	c := newCPU(t, 1)
	x := []float32{1, -2, 3, 0.5}
	w := []float32{0, 0.5, -1, 2}
	dst := c.NewBuffer(4)
	c.RMSNorm(dst, bufOf(c, x), f32Tensor("n", w), 1, 1e-6, 1)
	got := read(t, c, dst)
	rms := math.Sqrt((1 + 4 + 9 + 0.25) / 4.0)
	for i := range x {
		if want := float64(x[i]) / rms * (1 + float64(w[i])); math.Abs(float64(got[i])-want) > 1e-5 {
			t.Errorf("norm %d = %v, want %v", i, got[i], want)
		}
	}
	g := []float32{1, -0.5, 2, -3}
	torch := []float64{0.8411920, -0.1542860, 1.9545977, -0.0036374}
	up := []float32{1, 1, 1, 2}
	got = make([]float32, 4)
	geluMul(got, g, up)
	for i := range g {
		if want := torch[i] * float64(up[i]); math.Abs(float64(got[i])-want) > 1e-6 {
			t.Errorf("gelu_mul %d = %v, want %v", i, got[i], want)
		}
	}
}

// TestGELUMulLong checks the GELU-tanh gate over a range where exp saturates at both ends, on a
// length that leaves a tail after the vector loop, against the float64 tanh form.
func TestGELUMulLong(t *testing.T) {
	const n = 1003
	g, u := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = float32(i-n/2) / 40 // -12.5 .. 12.5
		u[i] = 1 + float32(i%7)/10
	}
	got := make([]float32, n)
	geluMul(got, g, u)
	for i, x := range g {
		xf := float64(x)
		want := 0.5 * xf * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(xf+0.044715*xf*xf*xf))) * float64(u[i])
		if math.Abs(float64(got[i])-want) > 2e-6*math.Max(1, math.Abs(want)) {
			t.Fatalf("gelu_mul(%v) = %v, want %v", x, got[i], want)
		}
	}
}
