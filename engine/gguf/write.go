package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/layaapp/laya/engine/tensor"
)

// KV is one metadata pair to write. Value must be one of the Go types listed at ValueType (an
// int is written as int32, a []int as an int32 array).
type KV struct {
	Key   string
	Value any
}

// Write writes a version 3 GGUF file with meta in the given order and tensors (named, shaped
// row-major, with Data of the exact size) laid out in order, each at the file's alignment:
// general.alignment from meta when present, else DefaultAlignment.
func Write(w io.Writer, meta []KV, tensors []tensor.Tensor) error {
	align := uint64(DefaultAlignment)
	seen := map[string]bool{}
	for _, kv := range meta {
		if seen[kv.Key] {
			return fmt.Errorf("gguf: write: metadata key %q repeated", kv.Key)
		}
		seen[kv.Key] = true
		if kv.Key == "general.alignment" {
			a, ok := kv.Value.(uint32)
			if !ok || a == 0 || a&(a-1) != 0 {
				return fmt.Errorf("gguf: write: general.alignment must be a uint32 power of two, have %v", kv.Value)
			}
			align = uint64(a)
		}
	}
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(meta)))
	for _, kv := range meta {
		e.str(kv.Key)
		if err := e.value(kv.Value, true); err != nil {
			return fmt.Errorf("gguf: write: metadata %q: %w", kv.Key, err)
		}
	}
	var off uint64
	offs := make([]uint64, len(tensors))
	names := map[string]bool{}
	for i := range tensors {
		t := &tensors[i]
		typ, ok := TypeOf(t.DType)
		if !ok {
			return fmt.Errorf("gguf: write: tensor %q: dtype %v has no ggml type", t.Name, t.DType)
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("gguf: write: %w", err)
		}
		if names[t.Name] || len(t.Shape) > maxDims {
			return fmt.Errorf("gguf: write: tensor %q is repeated or has more than %d dimensions", t.Name, maxDims)
		}
		names[t.Name] = true
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			e.u64(uint64(t.Shape[j]))
		}
		e.u32(uint32(typ))
		e.u64(off)
		offs[i] = off
		off = (off + uint64(len(t.Data)) + align - 1) / align * align
	}
	if len(tensors) > 0 {
		e.pad(align)
		for i := range tensors {
			e.raw(tensors[i].Data)
			if i < len(tensors)-1 {
				e.zeros(offs[i+1] - offs[i] - uint64(len(tensors[i].Data)))
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

type encoder struct {
	w *bufio.Writer
	n uint64
}

func (e *encoder) raw(b []byte) { e.w.Write(b); e.n += uint64(len(b)) }

func (e *encoder) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }

func (e *encoder) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }

func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) zeros(n uint64) {
	for range n {
		e.w.WriteByte(0)
	}
	e.n += n
}

func (e *encoder) pad(align uint64) { e.zeros((align - e.n%align) % align) }

// value writes v, preceded by its type tag when tagged (array elements are not tagged).
func (e *encoder) value(v any, tagged bool) error {
	tag := func(t ValueType) {
		if tagged {
			e.u32(uint32(t))
		}
	}
	le := binary.LittleEndian
	switch v := v.(type) {
	case uint8:
		tag(ValueUint8)
		e.raw([]byte{v})
	case int8:
		tag(ValueInt8)
		e.raw([]byte{byte(v)})
	case bool:
		tag(ValueBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.raw([]byte{b})
	case uint16:
		tag(ValueUint16)
		e.raw(le.AppendUint16(nil, v))
	case int16:
		tag(ValueInt16)
		e.raw(le.AppendUint16(nil, uint16(v)))
	case uint32:
		tag(ValueUint32)
		e.u32(v)
	case int32:
		tag(ValueInt32)
		e.u32(uint32(v))
	case int:
		if v != int(int32(v)) {
			return fmt.Errorf("int %d does not fit int32", v)
		}
		tag(ValueInt32)
		e.u32(uint32(int32(v)))
	case float32:
		tag(ValueFloat32)
		e.u32(math.Float32bits(v))
	case uint64:
		tag(ValueUint64)
		e.u64(v)
	case int64:
		tag(ValueInt64)
		e.u64(uint64(v))
	case float64:
		tag(ValueFloat64)
		e.u64(math.Float64bits(v))
	case string:
		tag(ValueString)
		e.str(v)
	case []uint8:
		return writeArray(e, tagged, ValueUint8, v)
	case []int8:
		return writeArray(e, tagged, ValueInt8, v)
	case []bool:
		return writeArray(e, tagged, ValueBool, v)
	case []uint16:
		return writeArray(e, tagged, ValueUint16, v)
	case []int16:
		return writeArray(e, tagged, ValueInt16, v)
	case []uint32:
		return writeArray(e, tagged, ValueUint32, v)
	case []int32:
		return writeArray(e, tagged, ValueInt32, v)
	case []int:
		return writeArray(e, tagged, ValueInt32, v)
	case []float32:
		return writeArray(e, tagged, ValueFloat32, v)
	case []uint64:
		return writeArray(e, tagged, ValueUint64, v)
	case []int64:
		return writeArray(e, tagged, ValueInt64, v)
	case []float64:
		return writeArray(e, tagged, ValueFloat64, v)
	case []string:
		return writeArray(e, tagged, ValueString, v)
	case []any:
		for _, x := range v {
			if !isArray(x) {
				return fmt.Errorf("[]any holds %T; only arrays of arrays are []any", x)
			}
		}
		return writeArray(e, tagged, ValueArray, v)
	default:
		return fmt.Errorf("cannot write a value of type %T", v)
	}
	return nil
}

func isArray(v any) bool {
	switch v.(type) {
	case []uint8, []int8, []bool, []uint16, []int16, []uint32, []int32, []int, []float32,
		[]uint64, []int64, []float64, []string, []any:
		return true
	}
	return false
}

// writeArray writes an array: its tag when tagged, then the element type, count and elements
// (which, for an array of arrays, each carry their own element type and count).
func writeArray[T any](e *encoder, tagged bool, et ValueType, vs []T) error {
	if tagged {
		e.u32(uint32(ValueArray))
	}
	e.u32(uint32(et))
	e.u64(uint64(len(vs)))
	for _, v := range vs {
		if err := e.value(any(v), false); err != nil {
			return err
		}
	}
	return nil
}
