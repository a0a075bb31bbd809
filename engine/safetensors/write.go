package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// WriteTensor is one tensor to write: Data must hold exactly the bytes Shape and DType need.
type WriteTensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// Write writes a safetensors file holding tensors, in the given order and back to back, and meta as
// its __metadata__ (omitted when empty). The header is padded with spaces to a multiple of 8 bytes
// so that data starts aligned, as the reference writer does.
func Write(w io.Writer, tensors []WriteTensor, meta map[string]string) error {
	var h bytes.Buffer
	h.WriteByte('{')
	sep := func() {
		if h.Len() > 1 {
			h.WriteByte(',')
		}
	}
	if len(meta) > 0 {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			writeJSONString(&h, k)
			h.WriteByte(':')
			writeJSONString(&h, meta[k])
		}
		h.WriteByte('}')
	}
	seen := map[string]bool{}
	off := 0
	for _, t := range tensors {
		if t.Name == "__metadata__" || seen[t.Name] {
			return fmt.Errorf("safetensors: write: tensor name %q is reserved or repeated", t.Name)
		}
		seen[t.Name] = true
		size := t.DType.Size()
		if size == 0 {
			return fmt.Errorf("safetensors: write: tensor %q: unsupported dtype %q", t.Name, t.DType)
		}
		n := size
		for _, d := range t.Shape {
			if d <= 0 {
				return fmt.Errorf("safetensors: write: tensor %q: bad shape %v", t.Name, t.Shape)
			}
			n *= d
		}
		if n != len(t.Data) {
			return fmt.Errorf("safetensors: write: tensor %q: shape %v of %s needs %d bytes, have %d", t.Name, t.Shape, t.DType, n, len(t.Data))
		}
		sep()
		writeJSONString(&h, t.Name)
		h.WriteString(`:{"dtype":`)
		writeJSONString(&h, string(t.DType))
		h.WriteString(`,"shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, off+n)
		off += n
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}

	bw := bufio.NewWriter(w)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(h.Len()))
	bw.Write(lenBuf[:])
	bw.Write(h.Bytes())
	for _, t := range tensors {
		bw.Write(t.Data)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // marshalling a string cannot fail
	b.Write(q)
}
