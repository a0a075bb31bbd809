package gguf

import (
	"fmt"

	"github.com/layaapp/laya/engine/tensor"
)

// Type is a ggml tensor type as GGUF stores it.
type Type uint32

// The ggml tensor types this package reads (ggml.h numbering).
const (
	TypeF32  Type = 0
	TypeF16  Type = 1
	TypeQ4_0 Type = 2
	TypeQ5_0 Type = 6
	TypeQ8_0 Type = 8
	TypeQ4_K Type = 12
	TypeQ5_K Type = 13
	TypeQ6_K Type = 14
	TypeI32  Type = 26
	TypeBF16 Type = 30
)

// typeNames names every ggml type, supported or not, so errors can say what a file holds.
var typeNames = map[Type]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
	23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
	31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

// String is the type's ggml name, e.g. "Q4_K".
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

var toDType = map[Type]tensor.DType{
	TypeF32: tensor.F32, TypeF16: tensor.F16, TypeBF16: tensor.BF16, TypeQ8_0: tensor.Q8_0,
	TypeQ4_0: tensor.Q4_0, TypeQ5_0: tensor.Q5_0, TypeQ4_K: tensor.Q4_K, TypeQ5_K: tensor.Q5_K,
	TypeQ6_K: tensor.Q6_K, TypeI32: tensor.I32,
}

// DType is the tensor.DType of a ggml type, and false for a type this package does not read.
func (t Type) DType() (tensor.DType, bool) {
	d, ok := toDType[t]
	return d, ok
}

// TypeOf is the ggml type that stores d, and false for a dtype GGUF cannot hold (Affine).
func TypeOf(d tensor.DType) (Type, bool) {
	for t, dd := range toDType {
		if dd == d {
			return t, true
		}
	}
	return 0, false
}

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types. In File.Metadata they appear as the Go types uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64 and float64; an array is a slice of its
// element type ([]string, []float32, ...), and an array of arrays is []any.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

// scalarSize is the encoded size of a fixed-size value type, 0 for strings and arrays.
func (v ValueType) scalarSize() int {
	switch v {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	}
	return 0
}
