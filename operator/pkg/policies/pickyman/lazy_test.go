package pickyman

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestLazySortedMatchesSort checks that a lazySorted reads its elements exactly in the
// order a full sort gives them, whatever prefix is read first and in whatever order
// positions are read, for the orders the cycle uses (a key with ties broken by an ID).
func TestLazySortedMatchesSort(t *testing.T) {
	type item struct {
		key int
		id  string
	}
	byKey := func(a, b item) int {
		if x := cmp.Compare(a.key, b.key); x != 0 {
			return x
		}
		return cmp.Compare(a.id, b.id)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		items := make([]item, n)
		for i := range items {
			items[i] = item{key: r.IntN(1 + n/3), id: string(rune('a'+i%26)) + string(rune('A'+i/26))}
		}
		want := slices.Clone(items)
		slices.SortFunc(want, byKey)

		var l lazySorted[item]
		l.reset(slices.Clone(items), byKey)
		if l.len() != n {
			t.Fatalf("n=%d: len %d", n, l.len())
		}
		// A random prefix first, then random positions, then everything in order.
		got := []item{}
		for i := range r.IntN(n + 1) {
			v, _ := l.at(i)
			got = append(got, v)
		}
		if diff := gocmp.Diff(want[:len(got)], got, gocmp.AllowUnexported(item{})); diff != "" {
			t.Fatalf("n=%d: prefix differs from the sorted order (-want +got):\n%s", n, diff)
		}
		for range 10 {
			if n == 0 {
				break
			}
			i := r.IntN(n)
			if v, ok := l.at(i); !ok || v != want[i] {
				t.Fatalf("n=%d: at(%d) = %v, %v; want %v", n, i, v, ok, want[i])
			}
		}
		got = got[:0]
		for i := 0; ; i++ {
			v, ok := l.at(i)
			if !ok {
				break
			}
			got = append(got, v)
		}
		if diff := gocmp.Diff(want, got, gocmp.AllowUnexported(item{})); diff != "" {
			t.Fatalf("n=%d: order differs from the sorted order (-want +got):\n%s", n, diff)
		}
		if _, ok := l.at(-1); ok {
			t.Fatalf("n=%d: at(-1) reported an element", n)
		}
	}
}

// BenchmarkLazySortedHead compares reading the head of 10,000 elements from a lazySorted
// with sorting them all (the cycle's former order of the running jobs).
func BenchmarkLazySortedHead(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]float64, 10000)
	for i := range src {
		src[i] = r.Float64()
	}
	buf := make([]float64, len(src))
	b.Run("lazy-head-300", func(b *testing.B) {
		for b.Loop() {
			copy(buf, src)
			var l lazySorted[float64]
			l.reset(buf, cmp.Compare[float64])
			for i := range 300 {
				l.at(i)
			}
		}
	})
	b.Run("sort-all", func(b *testing.B) {
		for b.Loop() {
			copy(buf, src)
			slices.SortFunc(buf, cmp.Compare[float64])
		}
	})
}
