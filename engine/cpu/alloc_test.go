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
	dim, ffn, heads, kvh, hd, vocab := 128, 256, 4, 2, 32, 64
	embed := randTensor(r, wcase{tensor.Q8_0, 0}, vocab, dim)
	wq := randTensor(r, wcase{tensor.Q4_0, 0}, dim, dim)
	wk := randTensor(r, wcase{tensor.Affine, 4}, kvh*hd, dim)
	wv := randTensor(r, wcase{tensor.Q6_K, 0}, kvh*hd, 256)
	wv.Shape = []int{kvh * hd, 256}
	wgate := randTensor(r, wcase{tensor.Q4_K, 0}, ffn, 256)
	wdown := randTensor(r, wcase{tensor.F16, 0}, 256, ffn)
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
	cache := c.NewKVCache(backend.AttnShape{Layers: 1, Heads: heads, KVHeads: kvh, HeadDim: hd, Context: 64})
	x, h := c.NewBuffer(dim+256), c.NewBuffer(dim+256)
	q, k, v, att := c.NewBuffer(dim), c.NewBuffer(kvh*hd), c.NewBuffer(kvh*hd), c.NewBuffer(dim)
	g, u, o := c.NewBuffer(ffn), c.NewBuffer(ffn), c.NewBuffer(256)
	logits := make([]float32, 256)
	ids := []int32{0}
	pos := 0
	step := func() {
		ids[0] = int32(pos % vocab)
		xd := c.View(x, 0, dim)
		c.Embed(xd, embed, ids)
		c.RMSNorm(c.View(h, 0, dim), xd, norm, 1, 1e-5, 0)
		c.MatMul(q, c.View(h, 0, dim), wq, nil, 1)
		c.MatMul(k, c.View(h, 0, dim), wk, bias, 1)
		c.MatMul(v, h, wv, nil, 1)
		c.Rope(q, 1, heads, pos, rope)
		c.Rope(k, 1, kvh, pos, rope)
		c.Attention(att, q, k, v, cache, 0, pos, 1, 0)
		c.Add(xd, att, dim)
		c.MatMul(g, h, wgate, nil, 1)
		c.MatMul(u, h, wgate, nil, 1)
		c.SiLUMul(g, g, u, ffn)
		c.MatMul(o, g, wdown, nil, 1)
		c.Add(c.View(x, 0, 256), o, 256)
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
	c.Attention(out, q, k, v, cache, 0, 0, ctx-1, 0)
	q1, k1, v1, o1 := c.View(q, 0, 2048), c.View(k, 0, 256), c.View(v, 0, 256), c.View(out, 0, 2048)
	b.ResetTimer()
	for range b.N {
		cache.Truncate(ctx - 1)
		c.Attention(o1, q1, k1, v1, cache, 0, ctx-1, 1, 0)
	}
	if err := c.Sync(); err != nil {
		b.Fatal(err)
	}
}
