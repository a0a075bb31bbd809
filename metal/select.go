package metal

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
)

// MaxTopK is the most candidates a pick ranks (backend.Sampler's MaxPickTop).
const MaxTopK = mslTopkMax

// selector is the state of device picks (backend.Sampler). Candidates are ranked by the
// kernels' order-preserving key of each logit, the lower id first among equal keys, as the
// CPU sampler ranks; a NaN counts as -Inf. The scratch buffer holds the winners of
// intermediate selection stages (scratchRegion).
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

// The scratch buffer's regions, in uint32 words, for a capacity of c first-stage winners, of
// 2c words each: 0 and 1 for the winners of staged top-k selections (c keys, then c ids), 2
// for a pick's argmax stage's winners and 3 for its partial sums (2 words per threadgroup; the
// argmax stage has at most c threadgroups).
func scratchRegion(r, c int) uint64 { return uint64(r * 2 * c) }

// selectScratch makes the scratch buffer large enough for a pick of the top k (0: none) of n.
func (b *Backend) selectScratch(n, k int) bool {
	need := max((n+mslArgmaxTile-1)/mslArgmaxTile, (n+mslTopkTile-1)/mslTopkTile*k)
	if b.sel.scratch != 0 && need <= b.sel.cap {
		return true
	}
	h, err := b.dev.NewBuffer(4 * 4 * 2 * need)
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

// recordTop records the stages of a selection of the best k >= 2 of n values at in: each
// threadgroup sorts a tile of candidates and keeps its best k, and each next stage reduces the
// previous stage's winners, until one threadgroup writes the keys and ids at outK and outI.
func (b *Backend) recordTop(in Arg, n, k int, scratch Buf, outK, outI Arg) {
	cap := b.sel.cap
	inIDs, count, indexed := in, n, uint32(0)
	for r := 0; ; r ^= 1 {
		groups := (count + mslTopkTile - 1) / mslTopkTile
		oK, oI := outK, outI
		if groups > 1 {
			base := scratchRegion(r, cap)
			oK, oI = Arg{scratch, 4 * base}, Arg{scratch, 4 * (base + uint64(cap))}
		}
		p := mslSelectParams{n: uint32(count), k: uint32(k), indexed: indexed}
		b.pl.encTopk([3]uint32{uint32(groups), 1, 1}, [3]uint32{mslSelectThreads, 1, 1}, in, inIDs, oK, oI, &p)
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
	if !b.selectScratch(n, top) || !b.pickAreas() {
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
	b.pl.encArgmax([3]uint32{uint32(groups), 1, 1}, [3]uint32{mslSelectThreads, 1, 1}, o.args[0], winK, winI, part,
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
