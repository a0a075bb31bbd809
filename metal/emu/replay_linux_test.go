package emu_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

// llama is a random two-layer F32 Llama issued call by call, the way the engine does, on one
// backend.
type llama struct {
	be                          *metal.Backend
	embed, norm                 *tensor.Tensor
	an, fn, q, k, v, o, g, u, d []*tensor.Tensor
	rope                        *backend.Rope
	cache                       backend.KVCache
	x, qb, kb, vb, att, gb      backend.Buffer
	logits                      backend.Buffer
	// qkv are each layer's q, k and v weights, qkvOut their outputs.
	qkv    [][]*tensor.Tensor
	qkvOut []backend.Buffer
}

const (
	llDim, llFFN, llLayers, llHeads, llKVHeads, llHeadDim, llVocab, llRows = 64, 72, 2, 4, 2, 16, 100, 8
)

func newLlama(t *testing.T, seed uint64) *llama {
	t.Helper()
	be, err := metal.New(emu.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	rng := rand.New(rand.NewPCG(seed, 3))
	var all []*tensor.Tensor
	mat := func(name string, center, scale float64, shape ...int) *tensor.Tensor {
		n := 1
		for _, s := range shape {
			n *= s
		}
		data := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(center+scale*(2*rng.Float64()-1))))
		}
		w := &tensor.Tensor{Name: fmt.Sprintf("w%d", len(all)), DType: tensor.F32, Shape: shape, Data: data}
		all = append(all, w)
		return w
	}
	m := &llama{be: be, embed: mat("embed", 0, 1, llVocab, llDim), norm: mat("norm", 1, 0.2, llDim)}
	for range llLayers {
		m.an = append(m.an, mat("an", 1, 0.2, llDim))
		m.fn = append(m.fn, mat("fn", 1, 0.2, llDim))
		m.q = append(m.q, mat("q", 0, 0.5, llHeads*llHeadDim, llDim))
		m.k = append(m.k, mat("k", 0, 0.5, llKVHeads*llHeadDim, llDim))
		m.v = append(m.v, mat("v", 0, 0.5, llKVHeads*llHeadDim, llDim))
		m.o = append(m.o, mat("o", 0, 0.3, llDim, llHeads*llHeadDim))
		m.g = append(m.g, mat("g", 0, 0.3, llFFN, llDim))
		m.u = append(m.u, mat("u", 0, 0.3, llFFN, llDim))
		m.d = append(m.d, mat("d", 0, 0.3, llDim, llFFN))
		m.qkv = append(m.qkv, []*tensor.Tensor{m.q[len(m.q)-1], m.k[len(m.k)-1], m.v[len(m.v)-1]})
	}
	if err := be.Prepare(all); err != nil {
		t.Fatal(err)
	}
	inv := make([]float32, llHeadDim/2)
	for i := range inv {
		inv[i] = float32(math.Pow(10000, -2*float64(i)/llHeadDim))
	}
	m.rope = &backend.Rope{HeadDim: llHeadDim, InvFreq: inv}
	m.cache = be.NewKVCache(backend.AttnShape{Layers: llLayers, Heads: llHeads, KVHeads: llKVHeads, HeadDim: llHeadDim, Context: 64})
	qw, kvw := llHeads*llHeadDim, llKVHeads*llHeadDim
	m.x, m.att = be.NewBuffer(llRows*llDim), be.NewBuffer(llRows*qw)
	m.qb, m.kb, m.vb = be.NewBuffer(llRows*qw), be.NewBuffer(llRows*kvw), be.NewBuffer(llRows*kvw)
	m.gb, m.logits = be.NewBuffer(llRows*llFFN), be.NewBuffer(llVocab)
	m.qkvOut = []backend.Buffer{m.qb, m.kb, m.vb}
	return m
}

// forward issues the calls of one step over ids at pos, ending with the head of the last row.
func (m *llama) forward(ids []int32, pos int) {
	be, rows := m.be, len(ids)
	be.Embed(m.x, m.embed, ids)
	for l := range llLayers {
		be.MatMuls(m.qkvOut, m.x, backend.Norm{W: m.an[l], Eps: 1e-5}, m.qkv[l], nil, rows)
		be.StoreKV(m.cache, l, pos, rows, m.kb, m.vb, m.rope)
		be.Attention(m.att, m.qb, m.cache, l, pos, rows, 0, m.rope)
		be.MatMulAdd(m.x, m.att, m.o[l], rows)
		be.GLU(m.gb, m.x, backend.Norm{W: m.fn[l], Eps: 1e-5}, m.g[l], m.u[l], backend.SiLU, rows)
		be.MatMulAdd(m.x, m.gb, m.d[l], rows)
	}
	last := be.View(m.x, (rows-1)*llDim, llDim)
	be.MatMuls([]backend.Buffer{m.logits}, last, backend.Norm{W: m.norm, Eps: 1e-5}, []*tensor.Tensor{m.embed}, nil, 1)
}

// TestReplayMatchesFresh runs the same session on two backends: one replays its decode plan
// step after step, the other is made to record every step afresh (a different step in
// between). Prefill, decode, prefix reuse after Truncate and decode again must give identical
// logits, and the greedy id that the replaying backend selects on the device must be the
// argmax of those logits.
func TestReplayMatchesFresh(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	replayed, fresh := newLlama(t, seed), newLlama(t, seed)
	spoil := fresh.be.NewBuffer(llDim)
	type step struct {
		ids      []int32
		pos      int
		truncate int // Truncate to this length first; -1 for none
	}
	steps := []step{{[]int32{3, 14, 15, 92, 65}, 0, -1}}
	for i := range 5 {
		steps = append(steps, step{[]int32{int32(11 * i)}, 5 + i, -1})
	}
	steps = append(steps, step{[]int32{42}, 3, 3})
	for i := range 3 {
		steps = append(steps, step{[]int32{int32(7 + 13*i)}, 4 + i, -1})
	}
	want, got := make([]float32, llVocab), make([]float32, llVocab)
	for n, s := range steps {
		if s.truncate >= 0 {
			replayed.cache.Truncate(s.truncate)
			fresh.cache.Truncate(s.truncate)
		}
		fresh.be.Add(spoil, spoil, llDim)
		if err := fresh.be.Sync(); err != nil {
			t.Fatal(err)
		}
		fresh.forward(s.ids, s.pos)
		if err := fresh.be.Read(want, fresh.logits); err != nil {
			t.Fatal(err)
		}
		replayed.forward(s.ids, s.pos)
		replayed.be.Pick(replayed.logits, llVocab, backend.PickSpec{Top: 1}, 0)
		if err := replayed.be.Commit(); err != nil {
			t.Fatal(err)
		}
		pick := backend.Pick{IDs: make([]int32, 1), Logits: make([]float32, 1)}
		if err := replayed.be.Picked(&pick); err != nil {
			t.Fatal(err)
		}
		id, v := pick.ID, pick.Logits[0]
		if err := replayed.be.Read(got, replayed.logits); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("step %d (pos %d): logit %d is %v replayed, %v recorded afresh", n, s.pos, i, got[i], want[i])
			}
		}
		best := 0
		for i, x := range want {
			if x > want[best] {
				best = i
			}
		}
		if int(id) != best || v != want[best] {
			t.Fatalf("step %d: device argmax (%d, %v), want (%d, %v)", n, id, v, best, want[best])
		}
	}
}
