package gguf

import "strconv"

// String returns a string-valued metadata entry.
func (f *File) String(key string) (string, bool) {
	s, ok := f.Metadata[key].(string)
	return s, ok
}

// Uint returns an integer-valued entry of any integer type, and false when it is absent, not an
// integer, or negative.
func (f *File) Uint(key string) (uint64, bool) {
	switch v := f.Metadata[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(v), v >= 0
	case int16:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	}
	return 0, false
}

// Float returns a float-valued entry (float32 or float64). A float32 is widened through its
// shortest decimal form, so a converter's 1e-5 reads back as 1e-5, not 1.0000000025e-05.
func (f *File) Float(key string) (float64, bool) {
	switch v := f.Metadata[key].(type) {
	case float32:
		d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		return d, true
	case float64:
		return v, true
	}
	return 0, false
}

// Bool returns a bool-valued entry.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.Metadata[key].(bool)
	return b, ok
}
