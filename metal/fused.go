package metal

// Encoders of the fused decode kernels (matvec.metal's matvecs_<fmt> and matvec_glu_<fmt>,
// attention.metal's attention_decode*): what a record function passes and how it becomes one
// dispatch.

// fusedKernels returns the matvecs_<fmt> and matvec_glu_<fmt> kernels for a weight format.
func fusedKernels(d mslWeight) (matvecs, glu kernelID) {
	switch d.fmt {
	case mslWfF32:
		return kMatvecsF32, kMatvecGluF32
	case mslWfF16:
		return kMatvecsF16, kMatvecGluF16
	case mslWfBf16:
		return kMatvecsBf16, kMatvecGluBf16
	case mslWfQ80:
		return kMatvecsQ80, kMatvecGluQ80
	case mslWfQ40:
		return kMatvecsQ40, kMatvecGluQ40
	case mslWfQ50:
		return kMatvecsQ50, kMatvecGluQ50
	case mslWfQ4K:
		return kMatvecsQ4K, kMatvecGluQ4K
	case mslWfQ5K:
		return kMatvecsQ5K, kMatvecGluQ5K
	case mslWfQ6K:
		return kMatvecsQ6K, kMatvecGluQ6K
	}
	if d.bits == 8 {
		return kMatvecsAffine8, kMatvecGluAffine8
	}
	return kMatvecsAffine4, kMatvecGluAffine4
}

// foldedNorm is an RMSNorm folded into a mat-vec: w nil for none.
type foldedNorm struct {
	w           *weight
	eps, offset float32
}

// params returns the kernels' NormParams and the norm weight's binding (any valid binding,
// here fallback, without a norm).
func (n foldedNorm) params(fallback Arg) (mslNormParams, Arg) {
	if n.w == nil {
		return mslNormParams{}, fallback
	}
	return mslNormParams{on: 1, dt: n.w.dt, eps: n.eps, offset: n.offset}, n.w.data
}

// maxMatVecs is how many weights one matvecs dispatch takes.
const maxMatVecs = 3

// sameLayout reports whether a and b differ at most in their row count, so one matvecs
// dispatch can take both.
func sameLayout(a, b mslWeight) bool {
	a.rows = b.rows
	return a == b
}

// encMatVecs records the decode mat-vec of the weights ws (1 to maxMatVecs, of one format and
// width, see sameLayout) over the row x into outs, adding bias[i] where it is not nil, with
// norm folded in and, when addTo, out[0] also added to residual. No out may overlap x or
// residual: other threadgroups still read them.
func (pl *plan) encMatVecs(ws, bias []*weight, x Arg, outs []Arg, norm foldedNorm, residual Arg, addTo bool) {
	var w, s, bb, bs [maxMatVecs]Arg
	var o [maxMatVecs]Arg
	p := mslMatVecsParams{w: ws[0].desc}
	if addTo {
		p.addTo = 1
	}
	rows := [maxMatVecs]*uint32{&p.rows0, &p.rows1, &p.rows2}
	dts := [maxMatVecs]*uint32{&p.biasDT0, &p.biasDT1, &p.biasDT2}
	groups := uint32(0)
	for i := range maxMatVecs {
		// Absent weights bind the first one's buffers; their row count 0 gives them no threadgroups.
		k := min(i, len(ws)-1)
		w[i], s[i], bb[i], bs[i], o[i] = ws[k].data, ws[k].scales, ws[k].biases, ws[k].data, outs[k]
		if i >= len(ws) {
			continue
		}
		*rows[i] = ws[i].desc.rows
		groups += (ws[i].desc.rows + mvRowsPerGroup - 1) / mvRowsPerGroup
		if i < len(bias) && bias[i] != nil {
			p.hasBias |= 1 << i
			*dts[i], bs[i] = bias[i].dt, bias[i].data
		}
	}
	var nw Arg
	p.norm, nw = norm.params(x)
	if !addTo {
		residual = o[0]
	}
	k, _ := fusedKernels(p.w)
	pl.encMatvecsF32([3]uint32{groups, 1, 1}, mvThreads, w[0], s[0], bb[0], bs[0], w[1], s[1], bb[1], bs[1],
		w[2], s[2], bb[2], bs[2], x, nw, o[0], o[1], o[2], residual, &p)
	pl.ds[len(pl.ds)-1].Kernel = k
}

// encGLU records out = act(norm(x)·gateᵀ) ⊙ (norm(x)·upᵀ) for one row x (gate and up of one
// format and shape); out must not overlap x.
func (pl *plan) encGLU(gate, up *weight, x Arg, norm foldedNorm, act uint32, out Arg) {
	p := mslGLUParams{gate: gate.desc, up: up.desc, act: act}
	var nw Arg
	p.norm, nw = norm.params(x)
	_, k := fusedKernels(gate.desc)
	pl.encMatvecGluF32(groups1(int(gate.desc.rows), mvRowsPerGroup), mvThreads, gate.data, gate.scales, gate.biases,
		up.data, up.scales, up.biases, x, nw, out, &p)
	pl.ds[len(pl.ds)-1].Kernel = k
}

// attnSplits is how many threadgroups decode attention gives each head when a query sees
// positions cached positions: one up to above positions (mslAttSplitMin by default), so a short
// decode is one dispatch; past it one per length positions (mslAttSplitLen), at least 2 and at
// most mslAttSplitMax, and an attention_reduce pass (metal/README.md gives the reasoning).
func attnSplits(positions, above, length int) int {
	if positions <= above {
		return 1
	}
	return max(2, min((positions+length-1)/length, mslAttSplitMax))
}

// AttentionSplit makes decode attention split a head's positions over threadgroups when a
// query sees more than above (≥ 1) of them, one threadgroup per length (≥ 1) positions,
// instead of past 1024 positions, one per 512. For tests, which force the split on short
// contexts; other values keep the defaults.
func AttentionSplit(above, length int) Option {
	return func(b *Backend) {
		if above >= 1 && length >= 1 {
			b.attnSplit = [2]int{above, length}
		}
	}
}

func (b *Backend) attnSplits(positions int) int {
	if b.attnSplit[0] > 0 {
		return attnSplits(positions, b.attnSplit[0], b.attnSplit[1])
	}
	return attnSplits(positions, mslAttSplitMin, mslAttSplitLen)
}

// attnDecodeKernel picks the attention_decode entry point for a head size.
func attnDecodeKernel(headDim int) kernelID {
	switch headDim {
	case 64:
		return kAttentionDecode64
	case 128:
		return kAttentionDecode128
	case 256:
		return kAttentionDecode256
	}
	return kAttentionDecode
}

// encDecodeAttention records decode attention of the one row q (rotated by the RoPE table
// inv, p.pairs pairs, inside the kernel) over the caches kc and vc, whose last position is in
// step, into out; p.splits > 1 splits each head's positions over that many threadgroups, whose
// parts part (heads·splits·(headDim+2) floats) holds until attention_reduce merges them.
func (pl *plan) encDecodeAttention(q, kc, vc, out, step, inv, part Arg, p *mslAttnParams) {
	pl.encAttentionDecode([3]uint32{p.heads, p.splits, 1}, [3]uint32{mslAttSimdgroups * mslSimd, 1, 1}, q, kc, vc, out, step, inv, part, p)
	pl.ds[len(pl.ds)-1].Kernel = attnDecodeKernel(int(p.headDim))
	if p.splits > 1 {
		pl.encAttentionReduce([3]uint32{p.heads, 1, 1}, [3]uint32{mslAttSimdgroups * mslSimd, 1, 1}, part, out, p)
	}
}
