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

// TestSelect compares Argmax and TopK on the emulated device with refTop, on sizes that are
// and are not multiples of the kernels' tiles, through one to three reduction stages.
func TestSelect(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	be, err := metal.New(emu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, n := range []int{1, 31, 32, 1000, 12288, 32007} {
		for _, kind := range []string{"normal", "ties", "special"} {
			vals := logitSet(rng, kind, n)
			buf := upload(t, be, vals)
			wantIDs, wantVals := refTop(vals, min(n, metal.MaxTopK))
			id, v, err := be.Argmax(buf, n)
			if err != nil {
				t.Fatalf("n=%d %s: argmax: %v", n, kind, err)
			}
			// Values compare as numbers: -0 is reported as +0, which ranks equal.
			if id != wantIDs[0] || v != wantVals[0] {
				t.Errorf("n=%d %s: argmax (%d, %v), want (%d, %v)", n, kind, id, v, wantIDs[0], wantVals[0])
			}
			for _, k := range []int{1, 5, metal.MaxTopK} {
				k = min(k, n)
				ids, got := make([]int32, k), make([]float32, k)
				if err := be.TopK(ids, got, buf, n); err != nil {
					t.Fatalf("n=%d %s k=%d: %v", n, kind, k, err)
				}
				for i := range k {
					if ids[i] != wantIDs[i] || got[i] != wantVals[i] {
						t.Errorf("n=%d %s k=%d: rank %d is (%d, %v), want (%d, %v)", n, kind, k, i, ids[i], got[i], wantIDs[i], wantVals[i])
						break
					}
				}
			}
		}
	}
}

// TestSelectErrors checks that bad selections return errors and leave the backend usable.
func TestSelectErrors(t *testing.T) {
	be, err := metal.New(emu.New())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	buf := upload(t, be, []float32{1, 3, 2})
	for name, bad := range map[string]func() error{
		"k > n":   func() error { return be.TopK(make([]int32, 4), make([]float32, 4), buf, 3) },
		"k = 0":   func() error { return be.TopK(nil, nil, buf, 3) },
		"k > max": func() error { return be.TopK(make([]int32, 65), make([]float32, 65), buf, 3) },
		"lengths": func() error { return be.TopK(make([]int32, 2), make([]float32, 1), buf, 3) },
		"n > len": func() error { _, _, err := be.Argmax(buf, 4); return err },
		"n = 0":   func() error { _, _, err := be.Argmax(buf, 0); return err },
		"foreign": func() error { _, _, err := be.Argmax(nil, 1); return err },
	} {
		if err := bad(); err == nil {
			t.Errorf("%s: no error", name)
		}
		if id, _, err := be.Argmax(buf, 3); err != nil || id != 1 {
			t.Errorf("%s: afterwards argmax = %d, %v; want 1", name, id, err)
		}
	}
}
