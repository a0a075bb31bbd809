package tokenizer

// heapItem is an entry of a merge queue; a.before(b) puts a nearer the top. Both tokenizer
// models keep their queue as a plain slice so its storage is reused from one word to the next,
// which container/heap's interface boxing would defeat.
type heapItem[T any] interface{ before(T) bool }

func heapPush[T heapItem[T]](h []T, it T) []T {
	h = append(h, it)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop[T heapItem[T]](h []T) (T, []T) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, first := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[first]) {
			first = l
		}
		if r < len(h) && h[r].before(h[first]) {
			first = r
		}
		if first == i {
			break
		}
		h[i], h[first] = h[first], h[i]
		i = first
	}
	return top, h
}
