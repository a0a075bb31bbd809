package metal

import (
	"encoding/binary"
	"unsafe"
)

// PlanCounts are totals over the plans a Counter received: what the GPU would be asked to do,
// counted from the dispatches themselves. Bytes are the distinct device memory a dispatch reads
// or writes, each weight once per dispatch, as a bandwidth floor counts them; caches and tiles
// that re-read the same bytes are not counted again.
type PlanCounts struct {
	// Dispatches are kernel launches; Barriers are the launches that wait for every one before
	// them (their Barrier flag is set), the others run concurrently with those since the
	// last barrier.
	Dispatches, Barriers int
	// Commits are command buffers submitted; HostWaits are the times the host blocked on one,
	// QueuedWaits those of them while the next plan was already submitted behind it (so the
	// GPU had work while the host went on).
	Commits, HostWaits, QueuedWaits int
	// WeightBytes are read from weights, KVBytes read from and written to KV caches,
	// ActivationBytes read and written in activation buffers.
	WeightBytes, KVBytes, ActivationBytes int64
	// Unmodelled are dispatches of kernels whose bytes are not estimated (the recurrent
	// layers' kernels); their bytes are missing from the totals above.
	Unmodelled int
}

// Sub is the difference c - o, the counts of what happened between two snapshots.
func (c PlanCounts) Sub(o PlanCounts) PlanCounts {
	return PlanCounts{
		Dispatches: c.Dispatches - o.Dispatches, Barriers: c.Barriers - o.Barriers,
		Commits: c.Commits - o.Commits, HostWaits: c.HostWaits - o.HostWaits, QueuedWaits: c.QueuedWaits - o.QueuedWaits,
		WeightBytes: c.WeightBytes - o.WeightBytes, KVBytes: c.KVBytes - o.KVBytes,
		ActivationBytes: c.ActivationBytes - o.ActivationBytes, Unmodelled: c.Unmodelled - o.Unmodelled,
	}
}

// Counter is a Device that runs nothing: it counts the plans it is given (PlanCounts), so a
// model's step can be measured on any machine through the same recorder as on the GPU. Reads
// return zeros.
type Counter struct {
	next Buf
	size map[Buf]int
	// host holds what the host wrote to a buffer (the step's upload area, RoPE tables): the
	// positions the attention kernels read from there decide how much of the cache they read.
	host   map[Buf][]byte
	counts PlanCounts
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{size: map[Buf]int{}, host: map[Buf][]byte{}} }

// Counts returns the totals so far.
func (c *Counter) Counts() PlanCounts { return c.counts }

// Name is "plan".
func (c *Counter) Name() string { return "plan" }

// NewBuffer returns a handle; no memory is allocated until the host writes to it.
func (c *Counter) NewBuffer(size int) (Buf, error) {
	c.next++
	c.size[c.next] = size
	return c.next, nil
}

// Wrap returns a handle for weight bytes without touching them.
func (c *Counter) Wrap(data []byte) (Arg, error) {
	c.next++
	return Arg{Buf: c.next}, nil
}

// Free forgets b.
func (c *Counter) Free(b Buf) {
	delete(c.size, b)
	delete(c.host, b)
}

// Write keeps src for the kernels' per-step values.
func (c *Counter) Write(dst Arg, src []byte) {
	m, ok := c.host[dst.Buf]
	if !ok {
		m = make([]byte, c.size[dst.Buf])
		c.host[dst.Buf] = m
	}
	if int(dst.Off) < len(m) {
		copy(m[dst.Off:], src)
	}
}

// Read returns zeros: nothing ran.
func (c *Counter) Read(dst []byte, src Arg) { clear(dst) }

// Close does nothing.
func (c *Counter) Close() error { return nil }

// Submit counts plan as one command buffer committed.
func (c *Counter) Submit(plan []Dispatch) error {
	if len(plan) == 0 {
		return nil
	}
	c.counts.Commits++
	c.counts.Dispatches += len(plan)
	for i := range plan {
		c.counts.Barriers += int(plan[i].Barrier)
		c.count(&plan[i])
	}
	return nil
}

// Wait counts a host wait.
func (c *Counter) Wait() error {
	c.counts.HostWaits++
	return nil
}

// WaitPrevious counts a host wait with the next plan already queued behind the one waited for.
func (c *Counter) WaitPrevious() error {
	c.counts.HostWaits++
	c.counts.QueuedWaits++
	return nil
}

// word reads the uint32 the host stored at a, 0 when it stored none.
func (c *Counter) word(a Arg) uint32 {
	m := c.host[a.Buf]
	if int(a.Off)+4 > len(m) {
		return 0
	}
	return binary.LittleEndian.Uint32(m[a.Off:])
}

// params views a dispatch's parameter words as the kernel's parameter struct P; the generated
// structs are plain 4-byte words in the order encode writes them.
func params[P any](d *Dispatch) *P { return (*P)(unsafe.Pointer(&d.Params[0])) }

func kvBytes(kvHalf uint32) int64 {
	if kvHalf != 0 {
		return 2
	}
	return 4
}

func dtBytes(dt uint32) int64 {
	if dt == mslDtF32 {
		return 4
	}
	return 2
}

// rowBytes is what one row of w occupies, with its scales and biases for the affine format.
func (w *mslWeight) bytesPerRow() int64 {
	n := int64(w.rowBytes)
	if w.fmt == mslWfAffine && w.groupSize > 0 {
		n += 2 * int64(w.cols/w.groupSize) * dtBytes(w.scaleDT)
	}
	return n
}

func (w *mslWeight) bytes() int64 { return int64(w.rows) * w.bytesPerRow() }

// normBytes is what a folded norm of cols values reads of its weight: nothing when it is off.
func normBytes(n mslNormParams, cols uint32) int64 {
	if n.on == 0 {
		return 0
	}
	return int64(cols) * dtBytes(n.dt)
}

func (c *Counter) count(d *Dispatch) {
	const f = 4 // float32 activations
	k := &c.counts
	switch d.Kernel {
	case kMatvecsF32, kMatvecsF16, kMatvecsBf16, kMatvecsAffine4, kMatvecsAffine8, kMatvecsQ80, kMatvecsQ40,
		kMatvecsQ50, kMatvecsQ4K, kMatvecsQ5K, kMatvecsQ6K:
		p := params[mslMatVecsParams](d)
		rows := [3]uint32{p.rows0, p.rows1, p.rows2}
		dts := [3]uint32{p.biasDT0, p.biasDT1, p.biasDT2}
		for i, r := range rows {
			w := p.w
			w.rows = r
			k.WeightBytes += w.bytes()
			if p.hasBias>>i&1 != 0 {
				k.WeightBytes += int64(r) * dtBytes(dts[i])
			}
			k.ActivationBytes += f * int64(r)
		}
		k.WeightBytes += normBytes(p.norm, p.w.cols)
		k.ActivationBytes += f * int64(p.w.cols)
		if p.addTo != 0 {
			k.ActivationBytes += f * 2 * int64(p.rows0)
		}
	case kMatvecGluF32, kMatvecGluF16, kMatvecGluBf16, kMatvecGluAffine4, kMatvecGluAffine8, kMatvecGluQ80,
		kMatvecGluQ40, kMatvecGluQ50, kMatvecGluQ4K, kMatvecGluQ5K, kMatvecGluQ6K:
		p := params[mslGLUParams](d)
		k.WeightBytes += p.gate.bytes() + p.up.bytes() + normBytes(p.norm, p.gate.cols)
		k.ActivationBytes += f * (int64(p.gate.cols) + int64(p.gate.rows))
	case kMatmul:
		p := params[mslMatMulParams](d)
		k.WeightBytes += p.w.bytes()
		if p.hasBias != 0 {
			k.WeightBytes += int64(p.w.rows) * dtBytes(p.biasDT)
		}
		k.ActivationBytes += f * int64(p.rows) * int64(p.w.cols+p.w.rows)
	case kEmbed:
		p := params[mslEmbedParams](d)
		k.WeightBytes += int64(p.count) * p.w.bytesPerRow()
		k.ActivationBytes += f * int64(p.count) * int64(p.w.cols)
	case kRmsnorm:
		p := params[mslRMSNormParams](d)
		k.WeightBytes += int64(p.n) * dtBytes(p.wDT)
		k.ActivationBytes += 2 * f * int64(d.Groups[0]) * int64(p.n)
	case kKvStore:
		p := params[mslKVStoreParams](d)
		n := int64(p.rope.rows) * int64(p.rope.heads) * int64(p.rope.headDim)
		k.ActivationBytes += 2 * f * n
		k.KVBytes += 2 * kvBytes(p.kvHalf) * n
	case kAttentionBlock, kAttentionDecode, kAttentionDecode64, kAttentionDecode128, kAttentionDecode256:
		p := params[mslAttnParams](d)
		// Query row r attends positions (last-window, last] with last = step[0]+r; together the
		// rows read the keys and values from the first row's first position to the last row's.
		last := int64(c.word(d.Args[4])) + int64(p.rows) - 1
		first := int64(0)
		if p.window > 0 {
			first = max(0, int64(c.word(d.Args[4]))-int64(p.window)+1)
		}
		k.KVBytes += 2 * kvBytes(p.kvHalf) * (last - first + 1) * int64(p.kvHeads) * int64(p.headDim)
		k.ActivationBytes += 2 * f * int64(p.rows) * int64(p.heads) * int64(p.headDim)
		if d.Kernel != kAttentionBlock && p.splits > 1 {
			k.ActivationBytes += f * int64(p.heads) * int64(p.splits) * int64(p.headDim+2)
		}
	case kAttentionReduce:
		p := params[mslAttnParams](d)
		k.ActivationBytes += f * int64(p.heads) * (int64(p.splits)*int64(p.headDim+2) + int64(p.headDim))
	case kSiluMul, kGeluMul, kAddInplace:
		k.ActivationBytes += 3 * f * int64(params[mslEltParams](d).n)
	case kScaleInplace:
		k.ActivationBytes += 2 * f * int64(params[mslScaleParams](d).n)
	case kSamplePick:
		// The first argmax stage's winners and partial sums, the result area.
		p := params[mslPickParams](d)
		k.ActivationBytes += f * (4*int64(p.groups) + 2*int64(max(p.top, 1)) + 3)
	case kArgmax, kTopk:
		p := params[mslSelectParams](d)
		per := int64(f)
		if p.indexed != 0 {
			per = 2 * f
		}
		k.ActivationBytes += per * int64(p.n)
	default:
		k.Unmodelled++
	}
}
