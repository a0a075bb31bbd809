package metal

import (
	"fmt"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// nullDevice accepts everything and runs nothing: it isolates the host-side cost of a step.
type nullDevice struct {
	next       Buf
	dispatches int
}

func (d *nullDevice) Name() string               { return "null" }
func (d *nullDevice) NewBuffer(int) (Buf, error) { d.next++; return d.next, nil }
func (d *nullDevice) Wrap([]byte) (Arg, error)   { d.next++; return Arg{Buf: d.next}, nil }
func (d *nullDevice) Free(Buf)                   {}
func (d *nullDevice) Write(Arg, []byte)          {}
func (d *nullDevice) Read([]byte, Arg)           {}
func (d *nullDevice) Submit(p []Dispatch) error  { d.dispatches += len(p); return nil }
func (d *nullDevice) Wait() error                { return nil }
func (d *nullDevice) WaitPrevious() error        { return nil }
func (d *nullDevice) Close() error               { return nil }

// stepModel issues the operations of one Llama decode step the way the engine does, on zero
// 4-bit weights (group 64, f16 scales and biases) of the given shape.
type stepModel struct {
	be                         *Backend
	shape                      stepShape
	embed, norm, head          *tensor.Tensor
	attnNorm, ffnNorm          []*tensor.Tensor
	q, k, v, o, gate, up, down []*tensor.Tensor
	rope                       *backend.Rope
	cache                      backend.KVCache
	x, h, qb, kb, vb, att      backend.Buffer
	g, logits                  backend.Buffer
	ids                        []int32
	// qkv are each layer's q, k and v weights, qkvOut their outputs, heads and logitsOut the
	// final MatMuls' weight and output.
	qkv       [][]*tensor.Tensor
	qkvOut    []backend.Buffer
	heads     []*tensor.Tensor
	logitsOut []backend.Buffer
}

func affineTensor(name string, rows, cols int) *tensor.Tensor {
	g := cols / 64
	half := func(n string, r, c int) *tensor.Tensor {
		return &tensor.Tensor{Name: n, DType: tensor.F16, Shape: []int{r, c}, Data: make([]byte, 2*r*c)}
	}
	return &tensor.Tensor{Name: name, DType: tensor.Affine, Shape: []int{rows, cols}, Data: make([]byte, rows*cols/2),
		Bits: 4, GroupSize: 64, Scales: half(name+".scales", rows, g), Biases: half(name+".biases", rows, g)}
}

// stepShape is a Llama's geometry.
type stepShape struct {
	layers, dim, ffn, heads, kvHeads, headDim, vocab, context int
}

// smallShape keeps host-side tests cheap: their cost depends on the number of operations only.
func smallShape(layers int) stepShape {
	return stepShape{layers: layers, dim: 128, ffn: 256, heads: 4, kvHeads: 2, headDim: 32, vocab: 256, context: 1 << 20}
}

func newStepModel(t testing.TB, layers int) (*stepModel, *nullDevice) {
	dev := &nullDevice{}
	return newStepModelOn(t, dev, smallShape(layers)), dev
}

func newStepModelOn(t testing.TB, dev Device, sh stepShape) *stepModel {
	dim, ffn, heads, kvHeads, hd, vocab, layers := sh.dim, sh.ffn, sh.heads, sh.kvHeads, sh.headDim, sh.vocab, sh.layers
	be, err := New(dev)
	if err != nil {
		t.Fatal(err)
	}
	vec := func(n string) *tensor.Tensor {
		return &tensor.Tensor{Name: n, DType: tensor.F32, Shape: []int{dim}, Data: make([]byte, 4*dim)}
	}
	m := &stepModel{be: be, shape: sh, embed: affineTensor("embed", vocab, dim), norm: vec("norm"), head: affineTensor("head", vocab, dim)}
	all := []*tensor.Tensor{m.embed, m.norm, m.head}
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("l%d.", l)
		m.attnNorm = append(m.attnNorm, vec(p+"an"))
		m.ffnNorm = append(m.ffnNorm, vec(p+"fn"))
		m.q = append(m.q, affineTensor(p+"q", heads*hd, dim))
		m.k = append(m.k, affineTensor(p+"k", kvHeads*hd, dim))
		m.v = append(m.v, affineTensor(p+"v", kvHeads*hd, dim))
		m.o = append(m.o, affineTensor(p+"o", dim, heads*hd))
		m.gate = append(m.gate, affineTensor(p+"g", ffn, dim))
		m.up = append(m.up, affineTensor(p+"u", ffn, dim))
		m.down = append(m.down, affineTensor(p+"d", dim, ffn))
		m.qkv = append(m.qkv, []*tensor.Tensor{m.q[l], m.k[l], m.v[l]})
		all = append(all, m.attnNorm[l], m.ffnNorm[l], m.q[l], m.k[l], m.v[l], m.o[l], m.gate[l], m.up[l], m.down[l])
	}
	if err := be.Prepare(all); err != nil {
		t.Fatal(err)
	}
	m.rope = &backend.Rope{HeadDim: hd, InvFreq: make([]float32, hd/2)}
	m.cache = be.NewKVCache(backend.AttnShape{Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Context: sh.context})
	m.x, m.h, m.att = be.NewBuffer(dim), be.NewBuffer(dim), be.NewBuffer(heads*hd)
	m.qb, m.kb, m.vb = be.NewBuffer(heads*hd), be.NewBuffer(kvHeads*hd), be.NewBuffer(kvHeads*hd)
	m.g, m.logits = be.NewBuffer(ffn), be.NewBuffer(vocab)
	m.ids = []int32{7}
	m.qkvOut, m.heads, m.logitsOut = []backend.Buffer{m.qb, m.kb, m.vb}, []*tensor.Tensor{m.head}, []backend.Buffer{m.logits}
	return m
}

func (m *stepModel) step(pos int) error {
	m.stepCalls(pos)
	m.be.MatMuls(m.logitsOut, m.x, backend.Norm{W: m.norm, Eps: 1e-5}, m.heads, nil, 1)
	return m.be.Sync()
}

// stepCalls issues a decode step up to the final norm.
func (m *stepModel) stepCalls(pos int) {
	be, sh := m.be, m.shape
	be.Embed(m.x, m.embed, m.ids)
	for l := 0; l < sh.layers; l++ {
		be.MatMuls(m.qkvOut, m.x, backend.Norm{W: m.attnNorm[l], Eps: 1e-5}, m.qkv[l], nil, 1)
		be.StoreKV(m.cache, l, pos, 1, m.kb, m.vb, m.rope)
		be.Attention(m.att, m.qb, m.cache, l, pos, 1, 0, m.rope)
		be.MatMulAdd(m.x, m.att, m.o[l], 1)
		be.GLU(m.g, m.x, backend.Norm{W: m.ffnNorm[l], Eps: 1e-5}, m.gate[l], m.up[l], backend.SiLU, 1)
		be.MatMulAdd(m.x, m.g, m.down[l], 1)
	}
}

// TestStepDispatches checks the plan of a decode step: 6 dispatches per layer (norm, q, k and v
// in one matvecs pass; the rotation of k in the cache write, of q in attention; the residual
// adds in the o and down projections; norm, gate, up and SiLU in one matvec_glu pass) plus
// embed and the head with the final norm folded in, with no allocation once the plan has grown.
func TestStepDispatches(t *testing.T) {
	m, dev := newStepModel(t, 3)
	if err := m.step(0); err != nil {
		t.Fatal(err)
	}
	if want := 6*3 + 2; dev.dispatches != want {
		t.Fatalf("%d dispatches per step, want %d", dev.dispatches, want)
	}
	pos := 1
	allocs := testing.AllocsPerRun(20, func() {
		if err := m.step(pos); err != nil {
			t.Fatal(err)
		}
		pos++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode step, want 0", allocs)
	}
}

// BenchmarkRecordStep measures the host cost of one decode step of a 22-layer model
// (TinyLlama's depth), without the GPU: "replayed" is the steady state of decoding, where the
// step's calls match the last plan; "recorded" makes every step record its plan afresh (a
// one-dispatch step in between, included in the time).
func BenchmarkRecordStep(b *testing.B) {
	b.Run("replayed", func(b *testing.B) {
		m, _ := newStepModel(b, 22)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := m.step(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("recorded", func(b *testing.B) {
		m, _ := newStepModel(b, 22)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.be.Add(m.x, m.h, 4)
			if err := m.be.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := m.step(i); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestErrorsSurfaceAtSync checks that bad calls are reported by Sync, drop the step and never
// panic.
func TestErrorsSurfaceAtSync(t *testing.T) {
	m, dev := newStepModel(t, 1)
	be := m.be
	unprepared := affineTensor("unprepared", 8, 64)
	for name, bad := range map[string]func(){
		"unprepared weight": func() { be.MatMul(m.h, m.x, unprepared, nil, 1) },
		"short buffer":      func() { be.MatMul(be.NewBuffer(3), m.h, m.q[0], nil, 1) },
		"token id":          func() { be.Embed(m.x, m.embed, []int32{256}) },
		"negative id":       func() { be.Embed(m.x, m.embed, []int32{-1}) },
		"layer":             func() { be.StoreKV(m.cache, 5, 0, 1, m.kb, m.vb, nil) },
		"gap in cache":      func() { be.StoreKV(m.cache, 0, 9, 1, m.kb, m.vb, nil) },
		"unstored keys":     func() { be.Attention(m.att, m.qb, m.cache, 0, 0, 1, 0, nil) },
		"foreign buffer":    func() { be.Add(m.x, fakeBuffer{}, 1) },
		"nil foreign":       func() { be.MatMuls([]backend.Buffer{struct{ backend.Buffer }{}}, m.x, backend.Norm{}, m.heads, nil, 1) },
		"bad view":          func() { be.View(m.x, 100, 100) },
		"bad rope":          func() { be.Attention(m.att, m.qb, m.cache, 0, 0, 0, 0, &backend.Rope{HeadDim: 32}) },
		"too many weights":  func() { be.MatMuls(make([]backend.Buffer, 5), m.h, backend.Norm{}, make([]*tensor.Tensor, 5), nil, 1) },
		"bad bias":          func() { be.MatMul(m.qb, m.h, m.q[0], m.embed, 1) },
	} {
		before := dev.dispatches
		be.MatMul(m.qb, m.h, m.q[0], nil, 1)
		bad()
		if err := be.Sync(); err == nil {
			t.Errorf("%s: Sync reported no error", name)
		}
		if dev.dispatches != before {
			t.Errorf("%s: a failed step ran %d dispatches", name, dev.dispatches-before)
		}
		if err := be.Sync(); err != nil {
			t.Errorf("%s: error persists after Sync: %v", name, err)
		}
	}
	if err := be.Prepare([]*tensor.Tensor{{Name: "ids", DType: tensor.I32, Shape: []int{1, 32}, Data: make([]byte, 128)}}); err == nil {
		t.Error("Prepare accepted an I32 matrix")
	}
	if err := be.Prepare([]*tensor.Tensor{{Name: "short", DType: tensor.F32, Shape: []int{4}, Data: make([]byte, 3)}}); err == nil {
		t.Error("Prepare accepted truncated data")
	}
}

type fakeBuffer struct{}

func (fakeBuffer) Len() int { return 1 << 20 }
