package memory

import "time"

// waiter is one AcquireWait call queued on a held key.
//
// All fields except ready are guarded by the table's mutex. The goroutine
// that closes ready writes token and err first, so the waiting goroutine may
// read them without the mutex once ready is closed.
type waiter struct {
	owner  string
	ttl    time.Duration
	handle *Driver // the handle whose Close cancels this wait
	entry  *entry  // the key waited for; entries with waiters are never freed

	prev, next *waiter // neighbours in entry's queue

	done  bool // granted or cancelled by Close; ready is closed
	token uint64
	err   error
	ready chan struct{}
}

// waitQueue is an intrusive FIFO of waiters, so that a waiter whose ctx ends
// leaves from the middle in O(1) without disturbing the others' order.
type waitQueue struct {
	head, tail *waiter
}

func (q *waitQueue) empty() bool { return q.head == nil }

func (q *waitQueue) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

func (q *waitQueue) popFront() *waiter {
	w := q.head
	q.remove(w)
	return w
}

func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}
