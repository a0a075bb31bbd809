package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// A decode step makes the same calls on the same buffers token after token; only the token id
// and the position change. Every call is therefore resolved to a callOp (weights, bindings,
// shapes) and logged with the plan it recorded, and the kernels read the token ids and the
// position from the call's slot in the upload area instead of from their parameters. When the
// next step's calls have the same callOps, each call only writes its new ids or position into
// its slot and the recorded plan is submitted again as it is: the dispatch list is not rebuilt.
// A call that differs (a prefill, another session's cache, a different model) ends the replay:
// the calls that matched are recorded afresh and recording continues from there.

// callKind names a Backend operation.
type callKind uint8

const (
	callEmbed callKind = iota + 1
	callRMSNorm
	callMatMul
	callMatMuls
	callMatMulAdd
	callGLU
	callStoreKV
	callAttention
	callScale
	callAdd
	callCausalConv
	callGatedDelta
	callGatedRMSNorm
	callSplitHeads
	callSigmoidMul
	callCopy
	callPick
	callEmbedPicked
)

// callOp is everything the dispatches recorded for a call depend on, apart from the per-step
// values in its slot: equal callOps record equal dispatches.
type callOp struct {
	kind    callKind
	w, bias *weight
	// mats and biases are the weights of MatMuls (gate and up of GLU), norm the weight of a
	// folded or plain RMSNorm.
	mats, biases            [maxMatMuls]*weight
	norm                    *weight
	args                    [6]Arg
	rows, n, heads, kvHeads int
	headDim, k, topK        int
	style                   uint32
	pairs, window           int
	eps, offset, scale      float32
	cache                   uint64 // kvCache.id
	kvHalf                  bool   // the cache holds half values
}

// call is a logged operation: its callOp, its position (StoreKV, Attention) and the upload slot
// the kernels read its per-step values from.
type call struct {
	op   callOp
	pos  int
	slot Arg
}

// emit logs c and records its dispatches, or, while replaying and c matches the next logged
// call, only updates that call's per-step values.
func (b *Backend) emit(c call) {
	if b.replaying {
		if b.cursor < len(b.log) && b.log[b.cursor].op == c.op {
			e := &b.log[b.cursor]
			b.cursor++
			e.pos = c.pos
			b.writeStep(e)
			return
		}
		b.diverge()
	}
	b.record(&c, true)
	b.log = append(b.log, c)
}

// diverge ends a replay before call cursor: the calls that matched are recorded again (their
// slots come out at the same offsets and already hold this step's values).
func (b *Backend) diverge() {
	n := b.cursor
	b.replaying, b.cursor = false, 0
	b.pl.reset()
	b.planCur = b.cur
	b.uploadN = 0
	for i := range n {
		b.record(&b.log[i], false)
	}
	b.log = b.log[:n]
}

// record appends c's dispatches to the plan; write says whether to store its per-step values.
func (b *Backend) record(c *call, write bool) {
	switch c.op.kind {
	case callEmbed:
		b.recordEmbed(c, write)
	case callRMSNorm:
		b.recordRMSNorm(c)
	case callMatMul:
		b.recordMatMul(c)
	case callMatMuls:
		b.recordMatMuls(c)
	case callMatMulAdd:
		b.recordMatMulAdd(c)
	case callGLU:
		b.recordGLU(c)
	case callStoreKV:
		b.recordStoreKV(c, write)
	case callAttention:
		b.recordAttention(c, write)
	case callScale:
		b.recordScale(c)
	case callAdd:
		b.recordAdd(c)
	case callCausalConv:
		b.recordCausalConv(c)
	case callGatedDelta:
		b.recordGatedDelta(c)
	case callGatedRMSNorm:
		b.recordGatedRMSNorm(c)
	case callSplitHeads:
		b.recordSplitHeads(c)
	case callSigmoidMul:
		b.recordSigmoidMul(c)
	case callCopy:
		b.recordCopy(c)
	case callPick:
		b.recordPick(c, write)
	case callEmbedPicked:
		b.recordEmbedPicked(c)
	}
}

// slot reserves c's upload slot, if its kind has per-step values, and fills it when write.
func (b *Backend) slot(c *call, write bool) bool {
	n := 4
	if c.op.kind == callEmbed {
		n = 4 * c.op.n
	}
	a, ok := b.reserve(n)
	if !ok {
		return false
	}
	c.slot = a
	if write {
		b.writeStep(c)
	}
	return true
}

// writeStep stores c's per-step values in its slot of the current upload area: the token ids
// of the Embed being made (non-negative, so their int32 bytes are the uint32 the kernel reads),
// the position, or a pick's uniform value.
func (b *Backend) writeStep(c *call) {
	up, ok := b.uploadArea()
	if !ok {
		return
	}
	slot := Arg{up, c.slot.Off}
	switch c.op.kind {
	case callEmbed:
		b.dev.Write(slot, int32Bytes(b.ids))
	case callStoreKV, callAttention:
		binary.LittleEndian.PutUint32(b.word[:], uint32(c.pos))
		b.dev.Write(slot, b.word[:])
	case callPick:
		binary.LittleEndian.PutUint32(b.word[:], math.Float32bits(b.u))
		b.dev.Write(slot, b.word[:])
	}
}

// flush submits the plan (see submit) and waits for everything submitted.
func (b *Backend) flush(endOfStep bool) error {
	err := b.submit(endOfStep)
	if werr := b.waitFor(b.seq); err == nil {
		err = werr
	}
	return err
}

// submit submits the plan without waiting, or drops it when an operation failed. At the end
// of a step (endOfStep) a submitted plan is kept for replay; a submit in the middle of a step
// (the upload area filled up) makes the step unfit for replay. Each submission flips the
// parity of the upload and pick result areas the next step writes.
func (b *Backend) submit(endOfStep bool) error {
	if b.replaying {
		if b.cursor == 0 && b.err == nil {
			return nil // no call since the last step: nothing to run, and the plan stays
		}
		if b.cursor < len(b.log) {
			b.diverge()
		}
	}
	err := b.err
	b.err = nil
	ran := false
	if err == nil && len(b.pl.ds) > 0 {
		if b.planCur != b.cur {
			b.swapParity()
		}
		b.pl.barriers()
		if err = b.dev.Submit(b.pl.ds); err != nil {
			err = fmt.Errorf("metal: %s: %w", b.dev.Name(), err)
		} else {
			ran = true
			b.seq++
			b.used[b.cur] = b.seq
			b.sel.lastPick = -1
			if b.sel.stepPicks > 0 {
				b.sel.resSeq[b.cur], b.sel.lastPick = b.seq, b.cur
			}
			b.cur ^= 1
		}
	}
	if !ran {
		// The step's picks were not made.
		b.sel.npend -= b.sel.stepPicks
	}
	b.sel.stepPicks = 0
	b.replaying = ran && endOfStep && !b.midStep
	b.midStep = !endOfStep
	b.cursor = 0
	if !b.replaying {
		b.pl.reset()
		b.planCur = b.cur
		b.log = b.log[:0]
		b.uploadN = 0
	}
	return err
}

// swapParity makes the kept plan bind the other upload and pick result areas, those of the
// current step.
func (b *Backend) swapParity() {
	swap := [4][2]Buf{{b.up[0], b.up[1]}, {b.up[1], b.up[0]}, {b.sel.res[0], b.sel.res[1]}, {b.sel.res[1], b.sel.res[0]}}
	for i := range b.pl.ds {
		d := &b.pl.ds[i]
		for j := range d.NArgs {
			for _, s := range swap {
				if d.Args[j].Buf == s[0] && s[0] != 0 {
					d.Args[j].Buf = s[1]
					break
				}
			}
		}
	}
	b.planCur = b.cur
}

// waitFor waits until submission seq has finished: for the one before the last, the last
// may still run (the step queued behind it).
func (b *Backend) waitFor(seq uint64) error {
	if seq <= b.done {
		return nil
	}
	var err error
	if seq < b.seq {
		err, b.done = b.dev.WaitPrevious(), b.seq-1
	} else {
		err, b.done = b.dev.Wait(), b.seq
		b.freeDropped()
	}
	if err != nil {
		// A plan that failed on the device is not replayed.
		b.replaying = false
		b.pl.reset()
		b.planCur = b.cur
		b.log = b.log[:0]
		b.uploadN = 0
		return fmt.Errorf("metal: %s: %w", b.dev.Name(), err)
	}
	return nil
}

func int32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
