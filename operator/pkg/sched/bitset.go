package sched

import "math/bits"

// bitset is a set of small non-negative integers (node positions within a model group).
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int32)   { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int32) { b[i>>6] &^= 1 << (uint(i) & 63) }

// next returns the smallest member >= from, or -1.
func (b bitset) next(from int32) int32 {
	if from < 0 {
		from = 0
	}
	w := int(from >> 6)
	if w >= len(b) {
		return -1
	}
	word := b[w] &^ (1<<(uint(from)&63) - 1)
	for {
		if word != 0 {
			return int32(w<<6 + bits.TrailingZeros64(word))
		}
		w++
		if w == len(b) {
			return -1
		}
		word = b[w]
	}
}
