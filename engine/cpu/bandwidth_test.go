package cpu

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// streamSum must read every byte once, whatever the length's remainder modulo a cache line or a
// word and wherever the slice starts.
func TestStreamSum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	buf := make([]byte, 100003+16)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 1000, 4097, 100003} {
		for _, off := range []int{0, 1, 3, 8} {
			p := buf[off : off+n]
			var want uint64
			i := 0
			for ; i+8 <= n; i += 8 {
				want += binary.LittleEndian.Uint64(p[i:])
			}
			for ; i < n; i++ {
				want += uint64(p[i])
			}
			if got := streamSum(p); got != want {
				t.Errorf("%d bytes at offset %d: sum %#x, want %#x", n, off, got, want)
			}
		}
	}
}

// Each thread's share is contiguous, the shares are equal to a byte and together they are the
// concatenation of the parts, in order.
func TestShares(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, sizes := range [][]int{{100}, {0, 7, 0, 13}, {1, 1, 1}, {5000, 3, 4096, 17, 1 << 16}} {
		var data [][]byte
		var all []byte
		for _, n := range sizes {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			data = append(data, p)
			all = append(all, p...)
		}
		for _, n := range []int{1, 2, 3, 7} {
			var got []byte
			for ti, share := range shares(data, n) {
				var size int
				for _, seg := range share {
					size += len(seg)
					got = append(got, seg...)
				}
				if want := len(all)*(ti+1)/n - len(all)*ti/n; size != want {
					t.Errorf("sizes %v, %d threads: share %d has %d bytes, want %d", sizes, n, ti, size, want)
				}
			}
			if !bytes.Equal(got, all) {
				t.Errorf("sizes %v, %d threads: shares do not cover the data in order", sizes, n)
			}
		}
	}
}

func TestBandwidth(t *testing.T) {
	data := [][]byte{make([]byte, 4<<20), make([]byte, 3<<20+5)}
	start := time.Now()
	sustained, peak := Bandwidth(data, 2, 50*time.Millisecond)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("Bandwidth returned after %v, before the 50ms asked for", took)
	}
	if !(sustained > 0) || math.IsInf(sustained, 0) || !(peak >= sustained) || math.IsInf(peak, 0) {
		t.Fatalf("Bandwidth = %v GB/s sustained, %v peak", sustained, peak)
	}
	if s, p := Bandwidth(nil, 2, 0); s != 0 || p != 0 {
		t.Errorf("Bandwidth of no data = %v, %v; want 0, 0", s, p)
	}
}
