package metal

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
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
	head      [4]uint32 // a pick's id, log-sum-exp and flags, as read back
	// res are the result areas of picks, used by alternate steps: the step after a pick reads
	// its id from one while writing its own pick to the other. resSeq[i] is the submission that
	// last wrote res[i].
	res    [2]Buf
	resSeq [2]uint64
	// pend are the picks not yet reported, oldest first; stepPicks counts those of the step
	// being recorded.
	pend      [2]pending
	npend     int
	stepPicks int
	// lastPick is the result area of the last submitted step's pick, -1 when it made none;
	// pickN is the number of values the last pick chose from.
	lastPick, pickN int
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
	b.sel.npend = 0
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

// The scratch buffer's regions, in uint32 words, for a capacity of c first-stage winners:
// the Selector's result (MaxTopK keys and ids), then regions of 2c words: 0 and 1 for the
// winners of staged selections (c keys, then c ids), 2 for a pick's first argmax stage's
// winners and 3 for a first argmax stage's partial sums (2 words per threadgroup; an argmax
// stage has at most c threadgroups).
func scratchRegion(r, c int) uint64 { return uint64(2*MaxTopK + r*2*c) }

func scratchWords(c int) int { return 2*MaxTopK + 4*2*c }

// selectScratch makes the scratch buffer large enough for the winners of the first stage.
func (b *Backend) selectScratch(n, k int) bool {
	_, tile := selectTile(k)
	need := (n + tile - 1) / tile * k
	if b.sel.scratch != 0 && need <= b.sel.cap {
		return true
	}
	h, err := b.dev.NewBuffer(4 * scratchWords(need))
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

// recordSelect records the selection of the Selector's top k into the scratch's result.
func (b *Backend) recordSelect(c *call) {
	o := &c.op
	scratch := o.args[1].Buf
	b.recordTop(o.args[0], o.n, o.k, scratch, Arg{scratch, 0}, Arg{scratch, 4 * MaxTopK})
}

// recordTop records the stages of a selection of the best k of n values at in: each
// threadgroup reduces a tile of candidates to its best k, and each next stage reduces the
// previous stage's winners, until one threadgroup writes the keys and ids at outK and outI.
func (b *Backend) recordTop(in Arg, n, k int, scratch Buf, outK, outI Arg) {
	kern, tile := selectTile(k)
	cap := b.sel.cap
	inIDs, count, indexed := in, n, uint32(0)
	part := Arg{scratch, 4 * scratchRegion(3, cap)} // written by a first argmax stage
	for r := 0; ; r ^= 1 {
		groups := (count + tile - 1) / tile
		oK, oI := outK, outI
		if groups > 1 {
			base := scratchRegion(r, cap)
			oK, oI = Arg{scratch, 4 * base}, Arg{scratch, 4 * (base + uint64(cap))}
		}
		p := mslSelectParams{n: uint32(count), k: uint32(k), indexed: indexed}
		g, t := [3]uint32{uint32(groups), 1, 1}, [3]uint32{mslSelectThreads, 1, 1}
		if kern == kArgmax {
			b.pl.encArgmax(g, t, in, inIDs, oK, oI, part, &p)
		} else {
			b.pl.encTopk(g, t, in, inIDs, oK, oI, &p)
		}
		if groups == 1 {
			return
		}
		in, inIDs, count, indexed = oK, oI, groups*k, 1
	}
}

// keyValue inverts the kernels' select_key.
func keyValue(k uint32) float32 {
	if k&0x80000000 != 0 {
		return math.Float32frombits(k &^ 0x80000000)
	}
	return math.Float32frombits(^k)
}

var _ backend.Sampler = (*Backend)(nil)

// Pick words of a result area (select.metal's PICK_*).
const (
	pickIDs   = mslPickKeys + MaxTopK
	pickWords = pickIDs + MaxTopK
)

// pending is a pick made and not yet reported: its result area and how many candidates it
// reports.
type pending struct {
	res, top int
}

// MaxPickTop implements backend.Sampler.
func (b *Backend) MaxPickTop() int { return MaxTopK }

// Pick implements backend.Sampler: argmax's first stage over the logits (with the partial
// sums of the log-sum-exp), a top-k selection of spec.Top into the step's result area when
// more than the best is wanted, and sample_pick, which writes the chosen id there.
func (b *Backend) Pick(logits backend.Buffer, n int, spec backend.PickSpec, u float64) {
	a, ok := b.buf("pick", logits, n)
	if !ok {
		return
	}
	top := spec.Top
	switch {
	case n < 1 || n >= math.MaxUint32:
		b.fail(fmt.Errorf("metal: pick from %d values", n))
		return
	case spec.TopK < 0 || spec.TopK > 0 && !(spec.Temperature > 0) || math.IsInf(float64(spec.Temperature), 0):
		b.fail(fmt.Errorf("metal: pick: top_k %d at temperature %g", spec.TopK, spec.Temperature))
		return
	case spec.TopK > n || top < max(1, spec.TopK+1) && !(spec.TopK == n && top == n) || top > min(n, MaxTopK):
		b.fail(fmt.Errorf("metal: pick: %d candidates for top_k %d of %d values (at most %d)", top, spec.TopK, n, MaxTopK))
		return
	case !(u >= 0 && u < 1):
		b.fail(fmt.Errorf("metal: pick: uniform value %g outside [0, 1)", u))
		return
	}
	if b.sel.npend == len(b.sel.pend) {
		b.fail(errors.New("metal: pick: two picks are waiting to be reported"))
		return
	}
	if top == 1 {
		top = 0 // sample_pick writes the best itself
	}
	inv := float32(0)
	if spec.TopK > 0 {
		inv = 1 / spec.Temperature
	}
	if !b.selectScratch(n, max(top, 1)) || !b.pickAreas() {
		return
	}
	b.u = float32(u)
	b.emit(call{op: callOp{kind: callPick, args: [6]Arg{a}, n: n, k: top, topK: spec.TopK, scale: inv}})
	b.sel.pend[b.sel.npend] = pending{res: b.cur, top: max(top, 1)}
	b.sel.npend++
	b.sel.stepPicks++
	b.sel.pickN = n
}

// pickAreas allocates the two result areas on first use.
func (b *Backend) pickAreas() bool {
	for i := range b.sel.res {
		if b.sel.res[i] != 0 {
			continue
		}
		h, err := b.dev.NewBuffer(4 * pickWords)
		if err != nil {
			b.fail(fmt.Errorf("metal: pick result: %w", err))
			return false
		}
		b.sel.res[i] = h
	}
	return true
}

func (b *Backend) recordPick(c *call, write bool) {
	if !b.slot(c, write) {
		return
	}
	o := &c.op
	res, scratch, cap := b.sel.res[b.cur], b.sel.scratch, b.sel.cap
	if o.k > 0 {
		b.recordTop(o.args[0], o.n, o.k, scratch, Arg{res, 4 * mslPickKeys}, Arg{res, 4 * pickIDs})
	}
	groups := (o.n + mslArgmaxTile - 1) / mslArgmaxTile
	w := scratchRegion(2, cap)
	winK, winI, part := Arg{scratch, 4 * w}, Arg{scratch, 4 * (w + uint64(cap))}, Arg{scratch, 4 * scratchRegion(3, cap)}
	b.pl.encArgmax([3]uint32{uint32(groups), 1, 1}, [3]uint32{mslSelectThreads, 1, 1}, o.args[0], o.args[0], winK, winI, part,
		&mslSelectParams{n: uint32(o.n), k: 1})
	b.pl.encSamplePick([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, winK, winI, part, c.slot, Arg{res, 0},
		&mslPickParams{groups: uint32(groups), k: uint32(o.topK), top: uint32(o.k), invTemp: o.scale})
}

// EmbedPicked implements backend.Sampler.
func (b *Backend) EmbedPicked(dst backend.Buffer, table *tensor.Tensor) {
	w, ok := b.weight("embed picked", table)
	if !ok {
		return
	}
	d, ok := b.buf("embed picked", dst, table.Cols())
	if !ok {
		return
	}
	if b.sel.lastPick != b.cur^1 || table.Rows() < b.sel.pickN {
		b.fail(errors.New("metal: embed picked: the step before picked no token from this table's rows"))
		return
	}
	b.emit(call{op: callOp{kind: callEmbedPicked, w: w, args: [6]Arg{d}, n: 1}})
}

func (b *Backend) recordEmbedPicked(c *call) {
	o := &c.op
	p := mslEmbedParams{w: o.w.desc, count: 1}
	b.pl.encEmbed([3]uint32{(o.w.desc.cols + 63) / 64, 1, 1}, [3]uint32{64, 1, 1},
		o.w.data, o.w.scales, o.w.biases, Arg{b.sel.res[b.cur^1], 4 * mslPickId}, o.args[0], &p)
}

// Picked implements backend.Sampler.
func (b *Backend) Picked(p *backend.Pick) error {
	if b.sel.npend == 0 {
		return errors.New("metal: picked: no pick is waiting to be reported")
	}
	pk := b.sel.pend[0]
	b.sel.pend[0] = b.sel.pend[1]
	b.sel.npend--
	if len(p.IDs) != pk.top || len(p.Logits) != pk.top {
		return fmt.Errorf("metal: picked: room for %d and %d candidates, the pick has %d", len(p.IDs), len(p.Logits), pk.top)
	}
	if err := b.waitFor(b.sel.resSeq[pk.res]); err != nil {
		return err
	}
	head := &b.sel.head
	res := b.sel.res[pk.res]
	b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&head[0])), 16), Arg{res, 0})
	b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&b.sel.keys[0])), 4*pk.top), Arg{res, 4 * mslPickKeys})
	b.dev.Read(unsafe.Slice((*byte)(unsafe.Pointer(&b.sel.ids[0])), 4*pk.top), Arg{res, 4 * pickIDs})
	p.ID, p.LogSumExp, p.Unsure = int32(head[mslPickId]), math.Float32frombits(head[mslPickLse]), head[mslPickFlags]&mslPickUnsure != 0
	for i := range pk.top {
		p.IDs[i], p.Logits[i] = int32(b.sel.ids[i]), keyValue(b.sel.keys[i])
	}
	return nil
}
