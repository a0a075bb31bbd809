package metal

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/layaapp/laya/engine/backend"
)

// MaxTopK is the largest k that TopK accepts.
const MaxTopK = mslTopkMax

// Selector is an optional capability of a backend: it finds the largest logits on the device,
// so sampling reads back k values instead of a vocabulary-sized vector. The engine detects it
// with a type assertion on its backend.Backend.
//
// Ranking follows the CPU sampler: larger first, the lower index first among equal values
// (-0 equals +0). A NaN counts as -Inf and is reported as -Inf.
type Selector interface {
	// Argmax submits the pending step and returns the index and value of the largest of the
	// first n values of src.
	Argmax(src backend.Buffer, n int) (id int32, logit float32, err error)
	// TopK submits the pending step and fills ids and logits, of equal length k with
	// 1 <= k <= min(n, MaxTopK), with the k largest of the first n values of src, largest first.
	TopK(ids []int32, logits []float32, src backend.Buffer, n int) error
}

var _ Selector = (*Backend)(nil)

// selector is the state of the selection kernels. The scratch buffer holds, in uint32 words,
// the result (keys at 0, ids at MaxTopK) and then two regions for the winners of intermediate
// stages, each cap keys followed by cap ids.
type selector struct {
	scratch   Buf
	cap       int
	keys, ids [MaxTopK]uint32
}

// Argmax implements Selector.
func (b *Backend) Argmax(src backend.Buffer, n int) (int32, float32, error) {
	if err := b.top(src, n, 1); err != nil {
		return 0, 0, err
	}
	return int32(b.sel.ids[0]), keyValue(b.sel.keys[0]), nil
}

// TopK implements Selector.
func (b *Backend) TopK(ids []int32, logits []float32, src backend.Buffer, n int) error {
	if len(ids) != len(logits) {
		b.fail(fmt.Errorf("metal: topk: %d ids but %d logits", len(ids), len(logits)))
	}
	if err := b.top(src, n, len(ids)); err != nil {
		return err
	}
	for i := range ids {
		ids[i], logits[i] = int32(b.sel.ids[i]), keyValue(b.sel.keys[i])
	}
	return nil
}

// top records the selection of the k largest of the first n values of src, submits the step
// and reads the winners into b.sel.
func (b *Backend) top(src backend.Buffer, n, k int) error {
	a, ok := b.buf("select", src, n)
	if ok && (n < 1 || n >= math.MaxUint32 || k < 1 || k > min(n, MaxTopK)) {
		b.fail(fmt.Errorf("metal: select: top %d of %d values (k must be in [1, min(n, %d)])", k, n, MaxTopK))
		ok = false
	}
	if ok && b.err == nil && b.selectScratch(n, k) {
		b.emit(call{op: callOp{kind: callSelect, args: [6]Arg{a, {Buf: b.sel.scratch}}, n: n, k: k}})
	}
	if err := b.flush(true); err != nil {
		return err
	}
	b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&b.sel.keys[0])), 4*k), Arg{b.sel.scratch, 0})
	b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&b.sel.ids[0])), 4*k), Arg{b.sel.scratch, 4 * MaxTopK})
	return nil
}

// selectTile is the number of candidates one threadgroup of the first stage reduces.
func selectTile(k int) (kernelID, int) {
	if k == 1 {
		return kArgmax, mslArgmaxTile
	}
	return kTopk, mslTopkTile
}

// selectScratch makes the scratch buffer large enough for the winners of the first stage.
func (b *Backend) selectScratch(n, k int) bool {
	_, tile := selectTile(k)
	need := (n + tile - 1) / tile * k
	if b.sel.scratch != 0 && need <= b.sel.cap {
		return true
	}
	h, err := b.dev.NewBuffer(4 * (2*MaxTopK + 4*need))
	if err != nil {
		b.fail(fmt.Errorf("metal: select scratch: %w", err))
		return false
	}
	if b.sel.scratch != 0 {
		b.dev.Free(b.sel.scratch)
	}
	b.sel.scratch, b.sel.cap = h, need
	return true
}

// recordSelect records the stages: each threadgroup reduces a tile of candidates to its best
// k, and each next stage reduces the previous stage's winners, until one threadgroup writes
// the result.
func (b *Backend) recordSelect(c *call) {
	o := &c.op
	scratch := o.args[1].Buf
	kern, tile := selectTile(o.k)
	cap := (o.n + tile - 1) / tile * o.k
	in, inIDs, count, indexed := o.args[0], o.args[0], o.n, uint32(0)
	for r := 0; ; r ^= 1 {
		groups := (count + tile - 1) / tile
		outK, outI := Arg{scratch, 0}, Arg{scratch, 4 * MaxTopK}
		if groups > 1 {
			base := uint64(2*MaxTopK + r*2*cap)
			outK, outI = Arg{scratch, 4 * base}, Arg{scratch, 4 * (base + uint64(cap))}
		}
		p := mslSelectParams{n: uint32(count), k: uint32(o.k), indexed: indexed}
		b.pl.encTopk([3]uint32{uint32(groups), 1, 1}, [3]uint32{mslSelectThreads, 1, 1}, in, inIDs, outK, outI, &p)
		b.pl.ds[len(b.pl.ds)-1].Kernel = kern // argmax shares topk's signature
		if groups == 1 {
			return
		}
		in, inIDs, count, indexed = outK, outI, groups*o.k, 1
	}
}

// keyValue inverts the kernels' select_key.
func keyValue(k uint32) float32 {
	if k&0x80000000 != 0 {
		return math.Float32frombits(k &^ 0x80000000)
	}
	return math.Float32frombits(^k)
}
