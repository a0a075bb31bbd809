package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/layaapp/laya/engine/tensor"
)

// hb builds GGUF bytes by hand, independently of Write.
type hb struct{ b []byte }

func (h *hb) u8(v uint8)   { h.b = append(h.b, v) }
func (h *hb) u16(v uint16) { h.b = binary.LittleEndian.AppendUint16(h.b, v) }
func (h *hb) u32(v uint32) { h.b = binary.LittleEndian.AppendUint32(h.b, v) }
func (h *hb) u64(v uint64) { h.b = binary.LittleEndian.AppendUint64(h.b, v) }
func (h *hb) str(s string) { h.u64(uint64(len(s))); h.b = append(h.b, s...) }
func (h *hb) kv(key string, vt uint32) {
	h.str(key)
	h.u32(vt)
}

type tinfo struct {
	name string
	ne   []uint64
	typ  uint32
	off  uint64
}

func (h *hb) info(t tinfo) {
	h.str(t.name)
	h.u32(uint32(len(t.ne)))
	for _, d := range t.ne {
		h.u64(d)
	}
	h.u32(t.typ)
	h.u64(t.off)
}

func (h *hb) alignTo(a int) {
	for len(h.b)%a != 0 {
		h.u8(0)
	}
}

// sample is a v3 file with one pair of every value type and two tensors: "a" F32 ne [4 2] and
// "b" Q4_0 ne [32 1] at offset 32.
func sample() (data, aData, bData []byte) {
	h := &hb{}
	h.b = append(h.b, "GGUF"...)
	h.u32(3)
	h.u64(2)  // tensors
	h.u64(15) // pairs
	h.kv("general.architecture", 8)
	h.str("llama")
	h.kv("u8", 0)
	h.u8(200)
	h.kv("i8", 1)
	h.u8(0xfe) // -2
	h.kv("u16", 2)
	h.u16(65535)
	h.kv("i16", 3)
	h.u16(0x8000) // -32768
	h.kv("u32", 4)
	h.u32(4000000000)
	h.kv("i32", 5)
	h.u32(0xffffffff) // -1
	h.kv("f32", 6)
	h.u32(math.Float32bits(0.5))
	h.kv("bool", 7)
	h.u8(1)
	h.kv("u64", 10)
	h.u64(1 << 40)
	h.kv("i64", 11)
	h.u64(0xfffffffffffffffd) // -3
	h.kv("f64", 12)
	h.u64(math.Float64bits(-1.25))
	h.kv("tokens", 9)
	h.u32(8)
	h.u64(3)
	h.str("<s>")
	h.str("")
	h.str("▁hi")
	h.kv("scores", 9)
	h.u32(6)
	h.u64(2)
	h.u32(math.Float32bits(-1))
	h.u32(math.Float32bits(2.5))
	h.kv("nested", 9)
	h.u32(9)
	h.u64(2)
	h.u32(5) // [int32 1, 2]
	h.u64(2)
	h.u32(1)
	h.u32(2)
	h.u32(7) // [bool true]
	h.u64(1)
	h.u8(1)
	h.info(tinfo{"a", []uint64{4, 2}, 0, 0})
	h.info(tinfo{"b", []uint64{32, 1}, 2, 32})
	h.alignTo(32)
	start := len(h.b)
	for i := range 8 {
		h.u32(math.Float32bits(float32(i) - 3))
	}
	h.alignTo(32)
	h.u16(0x3c00) // d = 1
	for i := range 16 {
		h.u8(uint8(i*16 + 15 - i))
	}
	data = h.b
	return data, data[start : start+32], data[start+32:]
}

func TestParseHandBuilt(t *testing.T) {
	data, aData, bData := sample()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 {
		t.Errorf("version %d alignment %d", f.Version, f.Alignment)
	}
	want := map[string]any{
		"general.architecture": "llama", "u8": uint8(200), "i8": int8(-2), "u16": uint16(65535),
		"i16": int16(-32768), "u32": uint32(4000000000), "i32": int32(-1), "f32": float32(0.5),
		"bool": true, "u64": uint64(1 << 40), "i64": int64(-3), "f64": -1.25,
		"tokens": []string{"<s>", "", "▁hi"}, "scores": []float32{-1, 2.5},
		"nested": []any{[]int32{1, 2}, []bool{true}},
	}
	if !reflect.DeepEqual(f.Metadata, want) {
		t.Errorf("metadata\n got %#v\nwant %#v", f.Metadata, want)
	}
	if f.Keys[0] != "general.architecture" || f.Keys[14] != "nested" || len(f.Keys) != 15 {
		t.Errorf("keys = %v", f.Keys)
	}
	a, ok := f.Tensor("a")
	if !ok || a.DType != tensor.F32 || !reflect.DeepEqual(a.Shape, []int{2, 4}) || !bytes.Equal(a.Data, aData) {
		t.Errorf("a = %+v", a)
	}
	b, ok := f.Tensor("b")
	if !ok || b.DType != tensor.Q4_0 || !reflect.DeepEqual(b.Shape, []int{1, 32}) || !bytes.Equal(b.Data, bData) || len(bData) != 18 {
		t.Errorf("b = %+v", b)
	}
	for _, tt := range f.Tensors {
		if err := tt.Validate(); err != nil {
			t.Error(err)
		}
	}
	if s, _ := f.String("general.architecture"); s != "llama" {
		t.Errorf("String = %q", s)
	}
	if v, ok := f.Uint("u32"); !ok || v != 4000000000 {
		t.Errorf("Uint(u32) = %d %v", v, ok)
	}
	if _, ok := f.Uint("i32"); ok {
		t.Error("Uint accepted a negative int32")
	}
	if v, ok := f.Float("f32"); !ok || v != 0.5 {
		t.Errorf("Float(f32) = %v %v", v, ok)
	}
	f.Metadata["eps"] = float32(1e-5)
	if v, ok := f.Float("eps"); !ok || v != 1e-5 {
		t.Errorf("Float(float32 1e-5) = %v %v", v, ok)
	}
	if v, ok := f.Float("f64"); !ok || v != -1.25 {
		t.Errorf("Float(f64) = %v %v", v, ok)
	}
	if v, ok := f.Bool("bool"); !ok || !v {
		t.Errorf("Bool = %v %v", v, ok)
	}
}

func TestWriteMatchesHandBuilt(t *testing.T) {
	data, aData, bData := sample()
	meta := []KV{
		{"general.architecture", "llama"}, {"u8", uint8(200)}, {"i8", int8(-2)}, {"u16", uint16(65535)},
		{"i16", int16(-32768)}, {"u32", uint32(4000000000)}, {"i32", int32(-1)}, {"f32", float32(0.5)},
		{"bool", true}, {"u64", uint64(1 << 40)}, {"i64", int64(-3)}, {"f64", -1.25},
		{"tokens", []string{"<s>", "", "▁hi"}}, {"scores", []float32{-1, 2.5}},
		{"nested", []any{[]int32{1, 2}, []bool{true}}},
	}
	ts := []tensor.Tensor{
		{Name: "a", DType: tensor.F32, Shape: []int{2, 4}, Data: aData},
		{Name: "b", DType: tensor.Q4_0, Shape: []int{1, 32}, Data: bData},
	}
	var buf bytes.Buffer
	if err := Write(&buf, meta, ts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("Write produced %d bytes that differ from the %d hand-built ones", buf.Len(), len(data))
	}
}

func TestWriteAlignmentAndRejects(t *testing.T) {
	ts := []tensor.Tensor{
		{Name: "x", DType: tensor.F16, Shape: []int{3}, Data: make([]byte, 6)},
		{Name: "y", DType: tensor.Q8_0, Shape: []int{2, 32}, Data: make([]byte, 68)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, []KV{{"general.alignment", uint32(64)}}, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 {
		t.Errorf("alignment %d", f.Alignment)
	}
	if y, _ := f.Tensor("y"); y == nil || !reflect.DeepEqual(y.Shape, []int{2, 32}) {
		t.Errorf("y = %+v", y)
	}

	bad := []struct {
		meta []KV
		ts   []tensor.Tensor
	}{
		{[]KV{{"k", 1}, {"k", 2}}, nil},
		{[]KV{{"general.alignment", uint32(48)}}, nil},
		{[]KV{{"general.alignment", 64}}, nil},
		{[]KV{{"k", struct{}{}}}, nil},
		{[]KV{{"k", []any{1}}}, nil},
		{[]KV{{"k", 1 << 40}}, nil},
		{nil, []tensor.Tensor{{Name: "z", DType: tensor.Q4_0, Shape: []int{16}, Data: make([]byte, 9)}}},
		{nil, []tensor.Tensor{{Name: "z", DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 4)}}},
		{nil, []tensor.Tensor{{Name: "z", DType: tensor.Affine, Shape: []int{2}, Data: make([]byte, 4)}}},
		{nil, []tensor.Tensor{ts[0], ts[0]}},
	}
	for i, c := range bad {
		if err := Write(&bytes.Buffer{}, c.meta, c.ts); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func TestTensorsAligned(t *testing.T) {
	var buf bytes.Buffer
	ts := []tensor.Tensor{
		{Name: "x", DType: tensor.F16, Shape: []int{3}, Data: make([]byte, 6)},
		{Name: "y", DType: tensor.Q6_K, Shape: []int{1, 256}, Data: make([]byte, 210)},
		{Name: "z", DType: tensor.BF16, Shape: []int{5}, Data: make([]byte, 10)},
	}
	if err := Write(&buf, []KV{{"general.alignment", uint32(64)}}, ts); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range f.Tensors {
		off := int(uintptrOf(tt.Data) - uintptrOf(data))
		if off%64 != 0 {
			t.Errorf("tensor %q starts at %d, not 64-aligned", tt.Name, off)
		}
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// header builds a v3 file: the given pairs (already encoded) and tensor infos, then data at
// alignment 32.
func header(nKV uint64, kvs func(h *hb), infos []tinfo, body int) []byte {
	h := &hb{}
	h.b = append(h.b, "GGUF"...)
	h.u32(3)
	h.u64(uint64(len(infos)))
	h.u64(nKV)
	if kvs != nil {
		kvs(h)
	}
	for _, in := range infos {
		h.info(in)
	}
	h.alignTo(32)
	h.b = append(h.b, make([]byte, body)...)
	return h.b
}

func TestParseCorrupt(t *testing.T) {
	f32 := func(name string, ne []uint64, off uint64) tinfo { return tinfo{name, ne, 0, off} }
	cases := []struct {
		name string
		data []byte
		msg  string // a substring the error must contain
	}{
		{"empty", nil, "magic"},
		{"bad magic", []byte("GGUG\x03\x00\x00\x00"), "magic"},
		{"version 1", append([]byte("GGUF"), 1, 0, 0, 0), "version 1"},
		{"big-endian version", append([]byte("GGUF"), 0, 0, 0, 3), "version"},
		{"tensor count lies", func() []byte {
			d := header(0, nil, nil, 0)
			binary.LittleEndian.PutUint64(d[8:], 1<<40)
			return d
		}(), "tensors"},
		{"pair count lies", header(1<<50, nil, nil, 0), "pairs"},
		{"pair count one too many", header(1, nil, nil, 16), ""},
		{"key length lies", header(1, func(h *hb) { h.u64(1 << 62) }, nil, 16), "string"},
		{"string value length lies", header(1, func(h *hb) { h.kv("k", 8); h.u64(1000) }, nil, 16), "string"},
		{"unknown value type", header(1, func(h *hb) { h.kv("k", 13); h.u64(0) }, nil, 0), "value type 13"},
		{"bool byte 2", header(1, func(h *hb) { h.kv("k", 7); h.u8(2) }, nil, 0), "bool"},
		{"bool array byte 3", header(1, func(h *hb) { h.kv("k", 9); h.u32(7); h.u64(2); h.u8(1); h.u8(3) }, nil, 0), "bool"},
		{"array count lies", header(1, func(h *hb) { h.kv("k", 9); h.u32(5); h.u64(1 << 61) }, nil, 64), "array"},
		{"string array count lies", header(1, func(h *hb) { h.kv("k", 9); h.u32(8); h.u64(1 << 40) }, nil, 64), "array"},
		{"array of unknown type", header(1, func(h *hb) { h.kv("k", 9); h.u32(99); h.u64(1) }, nil, 64), "unknown"},
		{"nested array count lies", header(1, func(h *hb) { h.kv("k", 9); h.u32(9); h.u64(1); h.u32(5); h.u64(1 << 40) }, nil, 64), "array"},
		{"nesting too deep", header(1, func(h *hb) {
			h.kv("k", 9)
			for range 6 {
				h.u32(9)
				h.u64(1)
			}
			h.u32(5)
			h.u64(0)
		}, nil, 0), "nested"},
		{"duplicate key", header(2, func(h *hb) { h.kv("k", 0); h.u8(1); h.kv("k", 0); h.u8(2) }, nil, 0), "twice"},
		{"alignment not a power of two", header(1, func(h *hb) { h.kv("general.alignment", 4); h.u32(24) }, nil, 0), "alignment"},
		{"alignment zero", header(1, func(h *hb) { h.kv("general.alignment", 4); h.u32(0) }, nil, 0), "alignment"},
		{"alignment a string", header(1, func(h *hb) { h.kv("general.alignment", 8); h.str("32") }, nil, 0), "alignment"},
		{"zero dims", header(0, nil, []tinfo{{"t", nil, 0, 0}}, 32), `"t": 0 dimensions`},
		{"five dims", header(0, nil, []tinfo{f32("t", []uint64{1, 1, 1, 1, 1}, 0)}, 32), "5 dimensions"},
		{"zero dim", header(0, nil, []tinfo{f32("t", []uint64{4, 0}, 0)}, 32), "dimensions"},
		{"overflowing dims", header(0, nil, []tinfo{f32("t", []uint64{1 << 32, 1 << 32}, 0)}, 32), "dimensions"},
		{"negative dim", header(0, nil, []tinfo{f32("t", []uint64{math.MaxUint64}, 0)}, 32), "dimensions"},
		{"Q4_1", header(0, nil, []tinfo{{"blk.0.attn_q.weight", []uint64{32}, 3, 0}}, 32), `tensor "blk.0.attn_q.weight": ggml type Q4_1 is not supported`},
		{"IQ2_XXS", header(0, nil, []tinfo{{"t", []uint64{256}, 16, 0}}, 256), "IQ2_XXS"},
		{"F64", header(0, nil, []tinfo{{"t", []uint64{1}, 28, 0}}, 32), "F64"},
		{"unknown type", header(0, nil, []tinfo{{"t", []uint64{1}, 77, 0}}, 32), "type(77)"},
		{"partial block", header(0, nil, []tinfo{{"t", []uint64{16, 2}, 8, 0}}, 64), "multiple"},
		{"misaligned offset", header(0, nil, []tinfo{f32("t", []uint64{1}, 4)}, 64), "alignment"},
		{"offset past EOF", header(0, nil, []tinfo{f32("t", []uint64{1}, 64)}, 32), "past the end"},
		{"size past EOF", header(0, nil, []tinfo{f32("t", []uint64{16}, 0)}, 32), "past the end"},
		{"huge offset", header(0, nil, []tinfo{f32("t", []uint64{1}, math.MaxUint64-31)}, 32), "past the end"},
		{"overlap", header(0, nil, []tinfo{f32("t", []uint64{16}, 0), f32("u", []uint64{1}, 32)}, 128), "overlaps"},
		{"same offset", header(0, nil, []tinfo{f32("t", []uint64{1}, 0), f32("u", []uint64{1}, 0)}, 32), "overlaps"},
		{"duplicate tensor", header(0, nil, []tinfo{f32("t", []uint64{1}, 0), f32("t", []uint64{1}, 32)}, 64), "twice"},
		{"no data section", func() []byte {
			d := header(0, nil, []tinfo{f32("t", []uint64{1}, 0)}, 0)
			return d[:len(d)-1]
		}(), ""},
	}
	for _, c := range cases {
		_, err := Parse(c.data)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.msg)
		}
	}
}

func TestParseTruncated(t *testing.T) {
	data, _, _ := sample()
	for i := range len(data) {
		if _, err := Parse(data[:i]); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", i, len(data))
		}
	}
}

func TestVersion2(t *testing.T) {
	data, _, _ := sample()
	v2 := bytes.Clone(data)
	binary.LittleEndian.PutUint32(v2[4:], 2)
	f, err := Parse(v2)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors) != 2 {
		t.Errorf("version %d, %d tensors", f.Version, len(f.Tensors))
	}
}

func FuzzParse(f *testing.F) {
	data, _, _ := sample()
	f.Add(data)
	f.Add(header(1, func(h *hb) { h.kv("general.alignment", 4); h.u32(64) }, []tinfo{{"t", []uint64{32, 2}, 8, 0}}, 68))
	f.Add(header(0, nil, []tinfo{{"t", []uint64{256}, 12, 0}, {"u", []uint64{256}, 14, 192}}, 402))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		total := 0
		for _, tt := range file.Tensors {
			if err := tt.Validate(); err != nil {
				t.Fatalf("accepted an invalid tensor: %v", err)
			}
			total += len(tt.Data)
		}
		if total > len(data) {
			t.Fatalf("tensors hold %d bytes of a %d-byte input", total, len(data))
		}
	})
}

func TestTypeSizes(t *testing.T) {
	// ggml type id, elements in a row of 512, bytes per row from ggml's block layouts.
	types := []struct {
		id       uint32
		dt       tensor.DType
		rowBytes int
	}{
		{0, tensor.F32, 2048}, {1, tensor.F16, 1024}, {30, tensor.BF16, 1024}, {8, tensor.Q8_0, 16 * 34},
		{2, tensor.Q4_0, 16 * 18}, {6, tensor.Q5_0, 16 * 22}, {12, tensor.Q4_K, 2 * 144},
		{13, tensor.Q5_K, 2 * 176}, {14, tensor.Q6_K, 2 * 210}, {26, tensor.I32, 2048},
	}
	var infos []tinfo
	off := 0
	for i, ty := range types {
		infos = append(infos, tinfo{fmt.Sprintf("t%d", i), []uint64{512, 3}, ty.id, uint64(off)})
		off += (3*ty.rowBytes + 31) / 32 * 32
	}
	f, err := Parse(header(0, nil, infos, off))
	if err != nil {
		t.Fatal(err)
	}
	for i, ty := range types {
		got := f.Tensors[i]
		if got.DType != ty.dt || len(got.Data) != 3*ty.rowBytes || !reflect.DeepEqual(got.Shape, []int{3, 512}) {
			t.Errorf("type %d: %v %v with %d bytes, want %v with %d", ty.id, got.DType, got.Shape, len(got.Data), ty.dt, 3*ty.rowBytes)
		}
	}
}
