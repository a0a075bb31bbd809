package tokenizer

import "unicode/utf8"

// byteChar maps each byte to the printable character GPT-2's byte-level BPE uses for it: the
// printable Latin-1 bytes stand for themselves, the other 68 are shifted to U+0100 upwards.
var byteChar [256]rune

// byteLevelStr is byteChar as strings.
var byteLevelStr [256]string

// charByte inverts byteChar; -1 marks characters that are not byte-level characters.
var charByte [324]int16

func init() {
	for i := range charByte {
		charByte[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteChar[b] = rune(b)
		} else {
			byteChar[b] = 256 + n
			n++
		}
		charByte[byteChar[b]] = int16(b)
		byteLevelStr[b] = string(byteChar[b])
	}
}

// byteLevelLen is the length of the byte-level form of s.
func byteLevelLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n += len(byteLevelStr[s[i]])
	}
	return n
}

// appendByteLevel appends the byte-level form of s.
func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, byteChar[s[i]])
	}
	return dst
}

// byteLevelBytes appends the bytes token t stands for, or reports false when t contains a
// character outside the byte-level alphabet (HF then uses the token's own UTF-8 bytes).
func byteLevelBytes(dst []byte, t string) ([]byte, bool) {
	n := len(dst)
	for _, r := range t {
		if r < 0 || int(r) >= len(charByte) || charByte[r] < 0 {
			return dst[:n], false
		}
		dst = append(dst, byte(charByte[r]))
	}
	return dst, true
}
