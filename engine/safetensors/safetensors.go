// Package safetensors reads and writes the safetensors format: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the raw data.
// Files are memory-mapped and tensors point into the mapping.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/layaapp/laya/engine/weights/mmap"
)

// MaxHeaderBytes bounds the JSON header, as the reference implementation does, so a corrupt length
// cannot make us read or allocate an arbitrary amount.
const MaxHeaderBytes = 100 << 20

// DType is a safetensors element type, spelled as in the header.
type DType string

// The element types this package reads. Other types a header may name (F64, I64, BOOL, F8_*, ...)
// are rejected: no supported model stores weights in them.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	U32  DType = "U32"
	I32  DType = "I32"
	U8   DType = "U8"
)

// Size is the number of bytes one element takes, or 0 for a type this package does not read.
func (d DType) Size() int {
	switch d {
	case F32, U32, I32:
		return 4
	case F16, BF16:
		return 2
	case U8:
		return 1
	}
	return 0
}

// Tensor is one entry of a file. Shape is row-major, as the header writes it.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	// Data is the tensor's bytes inside the file's data section.
	Data []byte
}

// File is a parsed safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	// Tensors are in the order of their data in the file.
	Tensors []Tensor

	byName map[string]int
	mm     *mmap.File
}

// Open maps and parses the file at path.
func Open(path string) (*File, error) {
	f, mm, err := mmap.Parse(path, Parse)
	if err != nil {
		return nil, err
	}
	f.Path, f.mm = path, mm
	return f, nil
}

// Close unmaps a file returned by Open; its tensors' Data must not be used afterwards.
func (f *File) Close() error {
	err := f.mm.Close()
	f.mm = nil
	return err
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

type entry struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int64 `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// Parse reads a whole safetensors file held in data. Tensors point into data. Every byte range is
// checked against the file size and against its dtype and shape, and ranges may not overlap.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: %d bytes is too short for the header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderBytes {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d-byte limit", n, MaxHeaderBytes)
	}
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors: header length %d runs past the end of the %d-byte file", n, len(data))
	}
	header, body := data[8:8+n], data[8+n:]

	f := &File{Metadata: map[string]string{}, byName: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(header))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	seenMeta := false
	var offs []int // offs[i] is where f.Tensors[i] starts in body
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("safetensors: header: %w", err)
		}
		name := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("safetensors: header entry %q: %w", name, err)
		}
		if name == "__metadata__" {
			if seenMeta {
				return nil, errors.New("safetensors: header has __metadata__ twice")
			}
			seenMeta = true
			if err := json.Unmarshal(raw, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %w", err)
			}
			if f.Metadata == nil { // "__metadata__": null
				f.Metadata = map[string]string{}
			}
			continue
		}
		if _, dup := f.byName[name]; dup {
			return nil, fmt.Errorf("safetensors: tensor %q: listed twice", name)
		}
		t, off, err := parseEntry(name, raw, body)
		if err != nil {
			return nil, err
		}
		f.byName[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		offs = append(offs, off)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("safetensors: trailing bytes after the header object")
	}

	// Order by position so overlaps show up between neighbours, and so Tensors follows the file.
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return offs[order[a]] < offs[order[b]] })
	sorted := make([]Tensor, len(order))
	end := 0
	for i, j := range order {
		t := f.Tensors[j]
		if offs[j] < end {
			return nil, fmt.Errorf("safetensors: tensor %q: data at [%d, %d) overlaps the previous tensor's, which ends at %d", t.Name, offs[j], offs[j]+len(t.Data), end)
		}
		end = offs[j] + len(t.Data)
		sorted[i] = t
		f.byName[t.Name] = i
	}
	f.Tensors = sorted
	return f, nil
}

func parseEntry(name string, raw json.RawMessage, body []byte) (Tensor, int, error) {
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: %w", name, err)
	}
	if e.DType == nil || e.Shape == nil || e.Offsets == nil {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: entry needs dtype, shape and data_offsets", name)
	}
	dt := DType(*e.DType)
	size := dt.Size()
	if size == 0 {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: dtype %q is not supported (want F32, F16, BF16, U32, I32 or U8)", name, dt)
	}
	if len(*e.Offsets) != 2 {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: data_offsets has %d entries, want 2", name, len(*e.Offsets))
	}
	begin, end := (*e.Offsets)[0], (*e.Offsets)[1]
	if begin < 0 || end < begin {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: bad data_offsets [%d, %d]", name, begin, end)
	}
	if end > int64(len(body)) {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] run past the %d-byte data section", name, begin, end, len(body))
	}
	// Dividing rather than multiplying keeps the check itself from overflowing, and bounding the
	// running product by the data size keeps the product from overflowing.
	shape := make([]int, len(*e.Shape))
	bytes := int64(size)
	for i, d := range *e.Shape {
		if d <= 0 {
			return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: bad shape %v", name, *e.Shape)
		}
		if d > int64(len(body))/bytes {
			return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs more than the %d-byte data section", name, *e.Shape, dt, len(body))
		}
		bytes *= d
		shape[i] = int(d)
	}
	if end-begin != bytes {
		return Tensor{}, 0, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", name, shape, dt, bytes, end-begin)
	}
	return Tensor{Name: name, DType: dt, Shape: shape, Data: body[begin:end:end]}, int(begin), nil
}
