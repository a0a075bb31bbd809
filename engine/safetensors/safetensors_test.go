package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// build lays out a file by hand: the length prefix, header text, then body.
func build(header string, body []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, body...)
}

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestParseHandBuilt(t *testing.T) {
	// b is listed first but stored second, so Tensors must come back in file order: a, b.
	header := `{"b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},` +
		`"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   `
	body := append(f32bytes(1.5, -2), 0x00, 0x3c, 0x00, 0xc0) // f16 1.0, -2.0
	f, err := Parse(build(header, body))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Metadata["format"]; got != "pt" || len(f.Metadata) != 1 {
		t.Errorf("metadata = %v, want map[format:pt]", f.Metadata)
	}
	if len(f.Tensors) != 2 || f.Tensors[0].Name != "a" || f.Tensors[1].Name != "b" {
		t.Fatalf("tensors = %+v, want a then b", f.Tensors)
	}
	a, ok := f.Tensor("a")
	if !ok || a.DType != F32 || len(a.Shape) != 1 || a.Shape[0] != 2 || !bytes.Equal(a.Data, body[:8]) {
		t.Errorf("a = %+v", a)
	}
	b, ok := f.Tensor("b")
	if !ok || b.DType != F16 || len(b.Shape) != 2 || b.Shape[0] != 1 || b.Shape[1] != 2 || !bytes.Equal(b.Data, body[8:]) {
		t.Errorf("b = %+v", b)
	}
	if _, ok := f.Tensor("c"); ok {
		t.Error("found a tensor that is not there")
	}
}

func TestWriteLayout(t *testing.T) {
	var buf bytes.Buffer
	ts := []WriteTensor{
		{Name: "w", DType: U32, Shape: []int{2, 1}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}},
		{Name: "s", DType: BF16, Shape: []int{3}, Data: []byte{0x80, 0x3f, 0, 0x40, 0x40, 0x40}},
		{Name: "x\"quoted", DType: U8, Shape: []int{1}, Data: []byte{7}},
	}
	if err := Write(&buf, ts, map[string]string{"format": "mlx"}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	n := binary.LittleEndian.Uint64(data)
	if n%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", n)
	}
	wantHeader := `{"__metadata__":{"format":"mlx"},"w":{"dtype":"U32","shape":[2,1],"data_offsets":[0,8]},` +
		`"s":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},"x\"quoted":{"dtype":"U8","shape":[1],"data_offsets":[14,15]}}`
	if got := strings.TrimRight(string(data[8:8+n]), " "); got != wantHeader {
		t.Errorf("header\n got %s\nwant %s", got, wantHeader)
	}
	body := data[8+n:]
	if !bytes.Equal(body, []byte{1, 0, 0, 0, 2, 0, 0, 0, 0x80, 0x3f, 0, 0x40, 0x40, 0x40, 7}) {
		t.Errorf("body = %v", body)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ts {
		g, ok := f.Tensor(w.Name)
		if !ok || g.DType != w.DType || !bytes.Equal(g.Data, w.Data) || len(g.Shape) != len(w.Shape) {
			t.Errorf("tensor %q read back as %+v", w.Name, g)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	bad := [][]WriteTensor{
		{{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}},
		{{Name: "a", DType: "F64", Shape: []int{1}, Data: make([]byte, 8)}},
		{{Name: "a", DType: F32, Shape: []int{0}, Data: nil}},
		{{Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}, {Name: "a", DType: U8, Shape: []int{1}, Data: []byte{1}}},
		{{Name: "__metadata__", DType: U8, Shape: []int{1}, Data: []byte{1}}},
	}
	for i, ts := range bad {
		if err := Write(&bytes.Buffer{}, ts, nil); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func TestParseCorrupt(t *testing.T) {
	body8 := make([]byte, 8)
	cases := []struct {
		name, header string
		body         []byte
	}{
		{"not an object", `[1,2]`, nil},
		{"bad json", `{"a":`, nil},
		{"trailing bytes", `{}{}`, nil},
		{"duplicate tensor", `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}},
		{"duplicate metadata", `{"__metadata__":{},"__metadata__":{}}`, nil},
		{"metadata not strings", `{"__metadata__":{"n":1}}`, nil},
		{"missing dtype", `{"a":{"shape":[2],"data_offsets":[0,8]}}`, body8},
		{"missing offsets", `{"a":{"dtype":"F32","shape":[2]}}`, body8},
		{"missing shape", `{"a":{"dtype":"F32","data_offsets":[0,8]}}`, body8},
		{"entry not an object", `{"a":3}`, body8},
		{"f64", `{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, body8},
		{"unknown dtype", `{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,8]}}`, body8},
		{"zero dim", `{"a":{"dtype":"F32","shape":[0,2],"data_offsets":[0,0]}}`, body8},
		{"negative dim", `{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, body8},
		{"fractional dim", `{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}}`, body8},
		{"huge dims", `{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, body8},
		{"overflowing product", `{"a":{"dtype":"U8","shape":[8,2305843009213693952,8],"data_offsets":[0,8]}}`, body8},
		{"shape/byte mismatch", `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, body8},
		{"offsets past EOF", `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, body8},
		{"begin after end", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, body8},
		{"negative begin", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, body8},
		{"three offsets", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, body8},
		{"overlap", `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, body8},
		{"same range twice", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, body8},
	}
	for _, c := range cases {
		if _, err := Parse(build(c.header, c.body)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}

	// Header lengths that lie.
	good := build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, body8)
	for _, n := range []uint64{0, 1, uint64(len(good)), MaxHeaderBytes + 1, math.MaxUint64} {
		d := bytes.Clone(good)
		binary.LittleEndian.PutUint64(d, n)
		if _, err := Parse(d); err == nil {
			t.Errorf("header length %d: no error", n)
		}
	}
}

func TestParseTruncated(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, []WriteTensor{
		{Name: "a", DType: F32, Shape: []int{2, 2}, Data: f32bytes(1, 2, 3, 4)},
		{Name: "b", DType: I32, Shape: []int{1}, Data: []byte{1, 2, 3, 4}},
	}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	if _, err := Parse(full); err != nil {
		t.Fatal(err)
	}
	for i := range len(full) {
		if _, err := Parse(full[:i]); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", i, len(full))
		}
	}
}

func writeFile(t *testing.T, path string, ts []WriteTensor) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func u8(name string, v byte) WriteTensor {
	return WriteTensor{Name: name, DType: U8, Shape: []int{1}, Data: []byte{v}}
}

func TestOpenDirSharded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), []WriteTensor{u8("a", 1), u8("b", 2)})
	writeFile(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), []WriteTensor{u8("c", 3)})
	index := `{"metadata":{"total_size":3},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}`
	if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]byte{"a": 1, "b": 2, "c": 3} {
		if got := s.ByName[name]; got == nil || got.Data[0] != want {
			t.Errorf("tensor %q = %+v, want value %d", name, got, want)
		}
	}
	if len(s.Files) != 2 || s.Bytes() <= 0 {
		t.Errorf("files = %d, bytes = %d", len(s.Files), s.Bytes())
	}

	// The index names a tensor its shard lacks, or a shard outside the directory.
	for _, idx := range []string{
		`{"weight_map":{"z":"model-00002-of-00002.safetensors"}}`,
		`{"weight_map":{"a":"../model-00001-of-00002.safetensors"}}`,
		`{"weight_map":{"a":"missing.safetensors"}}`,
		`{"weight_map":{}}`,
		`{"weight_map":`,
	} {
		if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(idx), 0o644); err != nil {
			t.Fatal(err)
		}
		if s, err := OpenDir(dir); err == nil {
			s.Close()
			t.Errorf("index %s: no error", idx)
		}
	}
}

func TestOpenDirUnindexed(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenDir(dir); err == nil {
		t.Error("empty directory: no error")
	}
	writeFile(t, filepath.Join(dir, "model.safetensors"), []WriteTensor{u8("a", 1)})
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.ByName["a"] == nil || s.ByName["a"].Data[0] != 1 {
		t.Errorf("a = %+v", s.ByName["a"])
	}
	s.Close()
	writeFile(t, filepath.Join(dir, "extra.safetensors"), []WriteTensor{u8("a", 2)})
	if s, err := OpenDir(dir); err == nil {
		s.Close()
		t.Error("tensor in two files: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.safetensors"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenDir(dir); err == nil {
		s.Close()
		t.Error("corrupt file: no error")
	}
}

func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []WriteTensor{
		{Name: "a", DType: F32, Shape: []int{2}, Data: f32bytes(1, 2)},
		{Name: "b", DType: U32, Shape: []int{1, 1}, Data: []byte{1, 2, 3, 4}},
	}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)))
	f.Add(build(`{}`, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		end := 0
		for _, tt := range file.Tensors {
			n := tt.DType.Size()
			for _, d := range tt.Shape {
				if d <= 0 {
					t.Fatalf("tensor %q: accepted shape %v", tt.Name, tt.Shape)
				}
				n *= d
			}
			if n != len(tt.Data) {
				t.Fatalf("tensor %q: %d bytes for shape %v", tt.Name, len(tt.Data), tt.Shape)
			}
			end += n
		}
		if end > len(data) {
			t.Fatalf("tensors hold %d bytes of a %d-byte input", end, len(data))
		}
	})
}

// BenchmarkParse parses the header of a file laid out like a 22-layer Llama checkpoint (201
// tensors); the data is small, so this measures header work, which is all Open does.
func BenchmarkParse(b *testing.B) {
	var ts []WriteTensor
	for i := range 201 {
		ts = append(ts, WriteTensor{Name: fmt.Sprintf("model.layers.%d.self_attn.q_proj.weight", i), DType: BF16, Shape: []int{8, 4}, Data: make([]byte, 64)})
	}
	var buf bytes.Buffer
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// A shape whose byte count overflows int64 to a small number must not pass for that number.
// Only a data section of at least 2^32 bytes lets each dimension through on its own, so the
// file is sparse: mapping it reads nothing but the header.
func TestParseShapeOverflow(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("needs a 64-bit address space")
	}
	// 2^32 * 2^32 is 2^64, which wraps to the 0 bytes data_offsets give.
	header := `{"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`
	path := filepath.Join(t.TempDir(), "big.safetensors")
	if err := os.WriteFile(path, build(header, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(8+len(header))+1<<32); err != nil {
		t.Skipf("no sparse file: %v", err)
	}
	f, err := Open(path)
	if err == nil {
		tt, _ := f.Tensor("x")
		f.Close()
		t.Fatalf("Open accepted shape %v with %d bytes of data", tt.Shape, len(tt.Data))
	}
	if !strings.Contains(err.Error(), "needs more than") {
		t.Errorf("error %q does not say the shape is too large", err)
	}
}
