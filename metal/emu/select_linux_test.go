package emu_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/layaapp/laya/engine/backend"
	"github.com/layaapp/laya/engine/tensor"
	"github.com/layaapp/laya/metal"
	"github.com/layaapp/laya/metal/emu"
)

// upload returns a backend buffer holding vals, written through Embed of an F32 table (the
// interface has no host write).
func upload(t *testing.T, be *metal.Backend, vals []float32) backend.Buffer {
	t.Helper()
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	table := &tensor.Tensor{Name: fmt.Sprintf("logits%d", len(vals)), DType: tensor.F32, Shape: []int{1, len(vals)}, Data: data}
	if err := be.Prepare([]*tensor.Tensor{table}); err != nil {
		t.Fatal(err)
	}
	buf := be.NewBuffer(len(vals))
	be.Embed(buf, table, []int32{0})
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	return buf
}

// refTop is the obviously correct selection: a stable sort of all indices by value, largest
// first, with NaN counted as -Inf (a stable sort keeps the lower index first among equals).
func refTop(vals []float32, k int) ([]int32, []float32) {
	key := func(i int32) float32 {
		if v := vals[i]; v == v {
			return v
		}
		return float32(math.Inf(-1))
	}
	ids := make([]int32, len(vals))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int { return cmp.Compare(key(b), key(a)) })
	out := make([]float32, k)
	for i := range out {
		out[i] = key(ids[i])
	}
	return ids[:k], out
}

// logitSet draws n logits of one of several kinds: continuous normals, few distinct values
// (many ties, all negative), or normals sprinkled with ±0, ±Inf and NaN.
func logitSet(rng *rand.Rand, kind string, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch kind {
		case "normal":
			v[i] = float32(rng.NormFloat64() * 4)
		case "ties":
			v[i] = -float32(rng.IntN(5)) - 0.5
		case "special":
			switch rng.IntN(8) {
			case 0:
				v[i] = float32(math.NaN())
			case 1:
				v[i] = float32(math.Inf(-1))
			case 2:
				v[i] = float32(math.Copysign(0, -1))
			case 3:
				v[i] = 0
			default:
				v[i] = -float32(rng.ExpFloat64())
			}
		}
	}
	return v
}

// TestPickErrors checks that bad picks return errors and leave the backend usable.
func TestPickErrors(t *testing.T) {
	be, err := metal.New(emu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	buf := upload(t, be, []float32{1, 3, 2})
	pick := func(spec backend.PickSpec, n int, u float64) error {
		be.Pick(buf, n, spec, u)
		if err := be.Commit(); err != nil {
			return err
		}
		p := backend.Pick{IDs: make([]int32, max(spec.Top, 1)), Logits: make([]float32, max(spec.Top, 1))}
		return be.Picked(&p)
	}
	sample := backend.PickSpec{TopK: 2, Temperature: 1, Top: 3}
	for name, bad := range map[string]func() error{
		"n > len":      func() error { return pick(backend.PickSpec{Top: 1}, 4, 0) },
		"n = 0":        func() error { return pick(backend.PickSpec{Top: 1}, 0, 0) },
		"top = 0":      func() error { return pick(backend.PickSpec{}, 3, 0) },
		"top > n":      func() error { return pick(backend.PickSpec{Top: 4}, 3, 0) },
		"top <= k":     func() error { return pick(backend.PickSpec{TopK: 2, Temperature: 1, Top: 2}, 3, 0) },
		"k > n":        func() error { return pick(backend.PickSpec{TopK: 4, Temperature: 1, Top: 3}, 3, 0) },
		"temperature":  func() error { return pick(backend.PickSpec{TopK: 2, Top: 3}, 3, 0) },
		"u = 1":        func() error { return pick(sample, 3, 1) },
		"u < 0":        func() error { return pick(sample, 3, -0.5) },
		"foreign":      func() error { be.Pick(nil, 1, backend.PickSpec{Top: 1}, 0); return be.Commit() },
		"none waiting": func() error { return be.Picked(&backend.Pick{}) },
		"room": func() error {
			be.Pick(buf, 3, backend.PickSpec{Top: 2}, 0)
			if err := be.Commit(); err != nil {
				return err
			}
			return be.Picked(&backend.Pick{IDs: make([]int32, 1), Logits: make([]float32, 1)})
		},
		"three waiting": func() error {
			for range 3 {
				be.Pick(buf, 3, backend.PickSpec{Top: 1}, 0)
				if err := be.Commit(); err != nil {
					return err
				}
			}
			return nil
		},
		"embed without a pick": func() error {
			if err := be.Sync(); err != nil {
				return err
			}
			be.EmbedPicked(buf, nil)
			return be.Commit()
		},
	} {
		if err := bad(); err == nil {
			t.Errorf("%s: no error", name)
		}
		if err := be.Sync(); err != nil {
			t.Errorf("%s: Sync afterwards: %v", name, err)
		}
		p := backend.Pick{IDs: make([]int32, 3), Logits: make([]float32, 3)}
		be.Pick(buf, 3, sample, 0.99)
		if err := be.Commit(); err != nil {
			t.Fatalf("%s: afterwards: %v", name, err)
		}
		if err := be.Picked(&p); err != nil || p.ID != 2 || !slices.Equal(p.IDs, []int32{1, 2, 0}) {
			t.Errorf("%s: afterwards picked %d of %v, %v; want 2 of [1 2 0]", name, p.ID, p.IDs, err)
		}
	}
}
