package pickyman

// lazySorted reads a slice in ascending order of cmp while sorting only as much of it as
// is read: the slice is made a binary min-heap in O(n), and reading position i pops the
// heap until i+1 elements are out, O(log n) each. A cycle reads only the head of its long
// orders (the running jobs by predicted end, each class of victim candidates by cost), so
// this replaces an O(n log n) sort by O(n + k log n) for the k elements read. With a total
// order (cmp returns 0 only for equal elements) the elements come out exactly as a full
// sort would put them.
//
// The popped elements are kept at the end of the same slice, smallest last, so the order
// costs no allocation: element i of the order is items[len(items)-1-i].
type lazySorted[T any] struct {
	items []T
	// heap is the number of elements still in the heap, items[:heap].
	heap int
	cmp  func(a, b T) int
}

// reset makes l read items (which it takes over and reorders) in the order of cmp.
func (l *lazySorted[T]) reset(items []T, cmp func(a, b T) int) {
	l.items, l.heap, l.cmp = items, len(items), cmp
	for i := l.heap/2 - 1; i >= 0; i-- {
		l.down(i)
	}
}

// len returns the number of elements.
func (l *lazySorted[T]) len() int { return len(l.items) }

// at returns element i of the order; ok is false past the end.
func (l *lazySorted[T]) at(i int) (v T, ok bool) {
	n := len(l.items)
	if i < 0 || i >= n {
		return v, false
	}
	for n-l.heap <= i {
		l.pop()
	}
	return l.items[n-1-i], true
}

// pop moves the heap's minimum to the front of the sorted tail.
func (l *lazySorted[T]) pop() {
	last := l.heap - 1
	l.items[0], l.items[last] = l.items[last], l.items[0]
	l.heap = last
	l.down(0)
}

func (l *lazySorted[T]) down(i int) {
	h := l.items[:l.heap]
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && l.cmp(h[r], h[c]) < 0 {
			c = r
		}
		if l.cmp(h[c], h[i]) >= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
