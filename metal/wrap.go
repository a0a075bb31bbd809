package metal

// wrapAlign is the alignment weight bytes need to be read in place. The kernels read weights as
// float, uint, half, ushort and bytes, at most 4 bytes and each at its natural alignment within
// a tensor, and Metal needs a device buffer's offset aligned only to the type a kernel reads
// from it; so a tensor starting at a multiple of 4 bytes into its buffer is readable in place.
const wrapAlign = 4

// noCopyRange says how a no-copy Metal buffer exposes the n bytes at addr: such a buffer must
// start on a page boundary and span whole pages, so it covers [start, start+size) and the data
// begins off bytes into it. ok is false when the data must be copied instead, because its
// offset in the page is not a multiple of wrapAlign (or n is not positive). page is a power of
// two.
func noCopyRange(addr uintptr, n int, page uintptr) (start, size, off uintptr, ok bool) {
	if n <= 0 || addr%wrapAlign != 0 || addr+uintptr(n) < addr {
		return 0, 0, 0, false
	}
	start = addr &^ (page - 1)
	end := (addr + uintptr(n) + page - 1) &^ (page - 1)
	if end < addr {
		return 0, 0, 0, false // the rounded end overflows the address space
	}
	return start, end - start, addr - start, true
}
