package memory

// expiryHeap is a min-heap of held entries ordered by deadline. Each entry
// records its own position (entry.index), so an extension can move it in
// O(log n) and the reaper finds the next expiry in O(1). It is typed rather
// than built on container/heap to keep the hot path free of interface calls.
type expiryHeap []*entry

func (h *expiryHeap) push(e *entry) {
	e.index = len(*h)
	*h = append(*h, e)
	h.up(e.index)
}

// remove takes e out of the heap wherever it sits.
func (h *expiryHeap) remove(e *entry) {
	s := *h
	i, last := e.index, len(s)-1
	if i != last {
		h.swap(i, last)
	}
	s[last] = nil // let the collector have an entry dropped from the table
	*h = s[:last]
	if i != last && !h.down(i) {
		h.up(i)
	}
	e.index = -1
}

// fix restores the heap order after e's deadline changed.
func (h *expiryHeap) fix(e *entry) {
	if !h.down(e.index) {
		h.up(e.index)
	}
}

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].deadline <= h[i].deadline {
			return
		}
		h.swap(parent, i)
		i = parent
	}
}

// down sinks the element at i and reports whether it moved.
func (h expiryHeap) down(i int) bool {
	start, n := i, len(h)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && h[right].deadline < h[child].deadline {
			child = right
		}
		if h[i].deadline <= h[child].deadline {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
