package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// TestDecodeStepAllocs runs the operations of one Llama decode step, views included, and requires
// that after warm-up a step allocates nothing.
func TestDecodeStepAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 20))
	c := newCPU(t, 2)
	dim, ffn, heads, kvh, hd, vocab := 256, 512, 8, 2, 32, 64
	embed := randTensor(r, wcase{tensor.Q8_0, 0}, vocab, dim)
	wq := randTensor(r, wcase{tensor.Q4_0, 0}, dim, dim)
	wk := randTensor(r, wcase{tensor.Affine, 4}, kvh*hd, dim)
	wv := randTensor(r, wcase{tensor.Q6_K, 0}, kvh*hd, dim)
	wgate := randTensor(r, wcase{tensor.Q4_K, 0}, ffn, dim)
	wdown := randTensor(r, wcase{tensor.F16, 0}, dim, ffn)
	norm := f32Tensor("norm", randVec(r, dim))
	bias := f32Tensor("bias", randVec(r, kvh*hd))
	if err := c.Prepare([]*tensor.Tensor{embed, wq, wk, wv, wgate, wdown, norm, bias}); err != nil {
		t.Fatal(err)
	}
	inv := make([]float32, hd/2)
	for i := range inv {
		inv[i] = float32(math.Pow(10000, -2*float64(i)/float64(hd)))
	}
	rope := &backend.Rope{HeadDim: hd, InvFreq: inv}
	n := backend.Norm{W: norm, Eps: 1e-5}
	cache := c.NewKVCache(backend.AttnShape{Layers: 1, Heads: heads, KVHeads: kvh, HeadDim: hd, Context: 64})
	x := c.NewBuffer(2 * dim)
	q, k, v, att := c.NewBuffer(dim), c.NewBuffer(kvh*hd), c.NewBuffer(kvh*hd), c.NewBuffer(dim)
	g, o := c.NewBuffer(ffn), c.NewBuffer(vocab)
	qkv, qkvW, qkvB := []backend.Buffer{q, k, v}, []*tensor.Tensor{wq, wk, wv}, []*tensor.Tensor{nil, bias, nil}
	head, headW := []backend.Buffer{o}, []*tensor.Tensor{embed}
	logits := make([]float32, vocab)
	ids := []int32{0}
	pos := 0
	step := func() {
		ids[0] = int32(pos % vocab)
		xd := c.View(x, dim, dim)
		c.Embed(xd, embed, ids)
		c.MatMuls(qkv, xd, n, qkvW, qkvB, 1)
		c.StoreKV(cache, 0, pos, 1, k, v, rope)
		c.Attention(att, q, cache, 0, pos, 1, 0, rope)
		c.MatMulAdd(xd, att, wq, 1)
		c.GLU(g, xd, n, wgate, wgate, backend.SiLU, 1)
		c.MatMulAdd(xd, g, wdown, 1)
		c.MatMuls(head, xd, n, headW, nil, 1)
		if err := c.Read(logits, o); err != nil {
			t.Fatal(err)
		}
		pos++
	}
	step()
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Fatalf("decode step allocates %v times", n)
	}
}

// benchAttention times one decode-step attention of a TinyLlama layer (32 heads, 4 KV heads,
// head dim 64) over ctx cached positions.
func benchAttention(b *testing.B, ctx int) {
	r := rand.New(rand.NewPCG(3, 3))
	c := newCPU(b, 0)
	s := backend.AttnShape{Layers: 1, Heads: 32, KVHeads: 4, HeadDim: 64, Context: ctx + 1}
	cache := c.NewKVCache(s)
	k, v := bufOf(c, randVec(r, ctx*256)), bufOf(c, randVec(r, ctx*256))
	q := bufOf(c, randVec(r, ctx*2048))
	out := c.NewBuffer(ctx * 2048)
	attend(c, out, q, k, v, cache, 0, 0, ctx-1, 0)
	q1, k1, v1, o1 := c.View(q, 0, 2048), c.View(k, 0, 256), c.View(v, 0, 256), c.View(out, 0, 2048)
	b.ResetTimer()
	for range b.N {
		cache.Truncate(ctx - 1)
		attend(c, o1, q1, k1, v1, cache, 0, ctx-1, 1, 0)
	}
	if err := c.Sync(); err != nil {
		b.Fatal(err)
	}
}
