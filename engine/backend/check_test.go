package backend

import (
	"strings"
	"testing"

	"github.com/layaapp/laya/engine/tensor"
)

type buf int

func (b buf) Len() int { return int(b) }

func f32(name string, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &tensor.Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: make([]byte, 4*n)}
}

// checkCase is one call of a check: want is "" for a valid call, else a fragment of the error.
type checkCase struct {
	name string
	err  error
	want string
}

func run(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, c := range cases {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.want != "" && c.err == nil:
			t.Errorf("%s: no error, want one with %q", c.name, c.want)
		case c.want != "" && !strings.Contains(c.err.Error(), c.want):
			t.Errorf("%s: error %q, want one with %q", c.name, c.err, c.want)
		}
	}
}

func TestCheckMatMuls(t *testing.T) {
	q, k, bad := f32("q", 8, 4), f32("k", 2, 4), f32("bad", 2, 5)
	bq, norm := f32("bq", 8), f32("norm", 4)
	n := Norm{W: norm, Eps: 1e-5}
	ws, dst := []*tensor.Tensor{q, k}, []Buffer{buf(24), buf(6)}
	run(t, []checkCase{
		{"valid", CheckMatMuls(dst, buf(12), n, ws, []*tensor.Tensor{bq, nil}, 3), ""},
		{"no norm, no bias", CheckMatMuls(dst, buf(12), Norm{}, ws, nil, 3), ""},
		{"zero rows", CheckMatMuls(dst, buf(0), n, ws, nil, 0), ""},
		{"no weights", CheckMatMuls(nil, buf(12), n, nil, nil, 3), "no weights"},
		{"outputs", CheckMatMuls(dst[:1], buf(12), n, ws, nil, 3), "outputs"},
		{"biases", CheckMatMuls(dst, buf(12), n, ws, []*tensor.Tensor{bq}, 3), "biases"},
		{"nil weight", CheckMatMuls(dst, buf(12), n, []*tensor.Tensor{q, nil}, nil, 3), "nil weight"},
		{"widths differ", CheckMatMuls(dst, buf(12), n, []*tensor.Tensor{q, bad}, nil, 3), "columns"},
		{"vector weight", CheckMatMuls(dst[:1], buf(12), n, []*tensor.Tensor{bq}, nil, 1), "shape"},
		{"bias length", CheckMatMuls(dst, buf(12), n, ws, []*tensor.Tensor{nil, bq}, 3), "bias"},
		{"norm length", CheckMatMuls(dst, buf(12), Norm{W: bq}, ws, nil, 3), "norm weight"},
		{"short input", CheckMatMuls(dst, buf(11), n, ws, nil, 3), "need 12"},
		{"short output", CheckMatMuls([]Buffer{buf(24), buf(5)}, buf(12), n, ws, nil, 3), "need 6"},
		{"nil output", CheckMatMuls([]Buffer{buf(24), nil}, buf(12), n, ws, nil, 3), "nil buffer"},
		{"nil input", CheckMatMuls(dst, nil, n, ws, nil, 3), "nil buffer"},
		{"negative rows", CheckMatMuls(dst, buf(12), n, ws, nil, -1), "rows"},
	})
}

func TestCheckMatMulAndAdd(t *testing.T) {
	w, b := f32("w", 3, 4), f32("b", 3)
	run(t, []checkCase{
		{"valid", CheckMatMul(buf(6), buf(8), w, b, 2), ""},
		{"bias length", CheckMatMul(buf(6), buf(8), w, f32("b4", 4), 2), "bias"},
		{"short output", CheckMatMul(buf(5), buf(8), w, nil, 2), "need 6"},
		{"short input", CheckMatMul(buf(6), buf(7), w, nil, 2), "need 8"},
		{"nil weight", CheckMatMul(buf(6), buf(8), nil, nil, 2), "nil weight"},
		{"add valid", CheckMatMulAdd(buf(6), buf(8), w, 2), ""},
		{"add short", CheckMatMulAdd(buf(5), buf(8), w, 2), "matmul-add"},
	})
}

func TestCheckGLU(t *testing.T) {
	g, u, norm := f32("g", 6, 4), f32("u", 6, 4), f32("norm", 4)
	n := Norm{W: norm}
	run(t, []checkCase{
		{"valid", CheckGLU(buf(12), buf(8), n, g, u, SiLU, 2), ""},
		{"gelu", CheckGLU(buf(12), buf(8), Norm{}, g, u, GELUTanh, 2), ""},
		{"activation", CheckGLU(buf(12), buf(8), n, g, u, Activation(7), 2), "activation"},
		{"up rows", CheckGLU(buf(12), buf(8), n, g, f32("u5", 5, 4), SiLU, 2), "differ"},
		{"up cols", CheckGLU(buf(12), buf(8), n, g, f32("u3", 6, 3), SiLU, 2), "columns"},
		{"nil gate", CheckGLU(buf(12), buf(8), n, nil, u, SiLU, 2), "nil weight"},
		{"norm length", CheckGLU(buf(12), buf(8), Norm{W: f32("n6", 6)}, g, u, SiLU, 2), "norm weight"},
		{"short output", CheckGLU(buf(11), buf(8), n, g, u, SiLU, 2), "need 12"},
		{"short input", CheckGLU(buf(12), buf(7), n, g, u, SiLU, 2), "need 8"},
	})
}

func TestCheckStoreKVAndAttention(t *testing.T) {
	s := AttnShape{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Context: 10}
	rope := &Rope{HeadDim: 8, InvFreq: []float32{1, 0.5}}
	lens := LayerLens{3, 0}
	kv := buf(2 * 16)
	run(t, []checkCase{
		{"store", CheckStoreKV(s, lens, 0, 3, 2, kv, kv, rope), ""},
		{"store again", CheckStoreKV(s, lens, 0, 1, 2, kv, kv, nil), ""},
		{"store gap", CheckStoreKV(s, lens, 1, 1, 2, kv, kv, nil), "positions"},
		{"store past context", CheckStoreKV(s, lens, 0, 3, 8, buf(128), buf(128), nil), "positions"},
		{"store layer", CheckStoreKV(s, lens, 2, 0, 1, kv, kv, nil), "layer 2"},
		{"store short v", CheckStoreKV(s, lens, 0, 3, 2, kv, buf(31), nil), "need 32"},
		{"store rope head", CheckStoreKV(s, lens, 0, 3, 2, kv, kv, &Rope{HeadDim: 4, InvFreq: []float32{1}}), "head dim"},
		{"store bad rope", CheckStoreKV(s, lens, 0, 3, 2, kv, kv, &Rope{HeadDim: 8, InvFreq: make([]float32, 5)}), "frequencies"},
		{"attend", CheckAttention(s, lens, buf(64), buf(64), 0, 1, 2, 0, rope), ""},
		{"attend window", CheckAttention(s, lens, buf(64), buf(64), 0, 1, 2, 2, nil), ""},
		{"attend unstored", CheckAttention(s, lens, buf(64), buf(64), 0, 2, 2, 0, nil), "stored"},
		{"attend layer", CheckAttention(s, lens, buf(64), buf(64), -1, 0, 1, 0, nil), "layer -1"},
		{"attend window sign", CheckAttention(s, lens, buf(64), buf(64), 0, 1, 2, -1, nil), "window"},
		{"attend short q", CheckAttention(s, lens, buf(64), buf(63), 0, 1, 2, 0, nil), "need 64"},
		{"attend rope head", CheckAttention(s, lens, buf(64), buf(64), 0, 1, 2, 0, &Rope{HeadDim: 4, InvFreq: []float32{1}}), "head dim"},
	})
}

func TestCheckNormEmbedLen(t *testing.T) {
	w, table := f32("w", 4), f32("table", 5, 4)
	run(t, []checkCase{
		{"norm", CheckRMSNorm(buf(8), buf(8), w, 2), ""},
		{"norm matrix", CheckRMSNorm(buf(8), buf(8), table, 2), "want 4 values"},
		{"norm nil", CheckRMSNorm(buf(8), buf(8), nil, 2), "nil weight"},
		{"norm short", CheckRMSNorm(buf(8), buf(7), w, 2), "need 8"},
		{"embed", CheckEmbed(buf(8), table, []int32{0, 4}), ""},
		{"embed id", CheckEmbed(buf(8), table, []int32{0, 5}), "token id 5"},
		{"embed negative id", CheckEmbed(buf(8), table, []int32{-1}), "token id -1"},
		{"embed short", CheckEmbed(buf(7), table, []int32{0, 1}), "need 8"},
		{"len", CheckLen("add", 3, buf(3), buf(4)), ""},
		{"len short", CheckLen("add", 3, buf(3), buf(2)), "add: buffer of 2"},
		{"len negative", CheckLen("add", -1, buf(3)), "-1"},
	})
}

func TestCheckRecurrent(t *testing.T) {
	s := DeltaShape{KHeads: 1, VHeads: 2, KDim: 4, VDim: 3}
	aLog, dt := f32("a_log", 2), f32("dt", 2)
	// Two rows: q|k|v of 14, out of 6, a and b of 2; a state of 24.
	delta := func(out, qkv, a, b, state Buffer, aLog, dt *tensor.Tensor, s DeltaShape, pos, rows int) error {
		return CheckGatedDelta(out, qkv, a, b, aLog, dt, state, s, pos, rows)
	}
	w := f32("w", 3)
	run(t, []checkCase{
		{"delta", delta(buf(12), buf(28), buf(4), buf(4), buf(24), aLog, dt, s, 0, 2), ""},
		{"delta shape", delta(buf(12), buf(28), buf(4), buf(4), buf(24), aLog, dt, DeltaShape{KHeads: 2, VHeads: 3, KDim: 4, VDim: 3}, 0, 2), "heads"},
		{"delta rows", delta(buf(12), buf(28), buf(4), buf(4), buf(24), aLog, dt, s, 0, -1), "rows -1"},
		{"delta A_log", delta(buf(12), buf(28), buf(4), buf(4), buf(24), f32("a3", 3), dt, s, 0, 2), "A_log"},
		{"delta dt_bias", delta(buf(12), buf(28), buf(4), buf(4), buf(24), aLog, nil, s, 0, 2), "dt_bias"},
		{"delta short qkv", delta(buf(12), buf(27), buf(4), buf(4), buf(24), aLog, dt, s, 0, 2), "need 28"},
		{"delta short state", delta(buf(12), buf(28), buf(4), buf(4), buf(23), aLog, dt, s, 0, 2), "need 24"},
		{"gated norm", CheckGatedRMSNorm(buf(6), buf(6), buf(6), w, 2), ""},
		{"gated norm short z", CheckGatedRMSNorm(buf(6), buf(6), buf(5), w, 2), "need 6"},
		{"gated norm nil", CheckGatedRMSNorm(buf(6), buf(6), buf(6), nil, 2), "nil weight"},
		{"split", CheckSplitHeads(buf(6), buf(6), buf(12), 2, 3), ""},
		{"split short src", CheckSplitHeads(buf(6), buf(6), buf(11), 2, 3), "need 12"},
		{"split negative", CheckSplitHeads(buf(6), buf(6), buf(12), -2, 3), "blocks"},
	})
}
