package etcd

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// closeSlack is added to the operation timeout to bound how long Close
	// waits for woken waiters: one attempt in flight, then their clean-up
	// is handed to the background.
	closeSlack = time.Second
	// watchPause is the first pause before a watch that ended without an
	// event (a leader loss, a closed connection) is replaced, doubling up
	// to lastBackoff while it keeps ending so.
	watchPause = 10 * time.Millisecond
	// recheckEvery is how often a waiter reads its queue again although
	// its watch has said nothing. A watch cannot miss an event, but it can
	// sit on a member that hangs with its connection open (a frozen
	// process or host) until gRPC's keep-alive drops the connection; the
	// reads, which go to any member, keep the waiter moving meanwhile.
	recheckEvery = 2 * time.Second
	// leaseTries bounds how many times a Txn is sent again with a fresh
	// lease after the server says its lease is gone.
	leaseTries = 3
)

// errRequeue says the Driver's waiter lease was lost: the waiter's queue key
// is gone, or about to be, and it must queue again.
var errRequeue = errors.New("etcd: waiter lease lost")

// AcquireWait takes key for owner for ttl, waiting in a first come, first
// served queue kept in etcd as long as ctx allows.
//
// A free key with nobody queued is taken at once, as by Acquire: one Txn,
// on a reused lease or a new grant. Otherwise the same Txn puts the waiter
// in the key's queue, a key on its Driver's waiter lease; waiters are
// served in the order of their queue keys' create revisions, as with
// etcd's concurrency.Mutex. The lease the waiter will hold the lock with is
// granted (or reused) at the start and kept alive while it waits, so that
// taking the key needs no grant.
//
// A waiter watches the queue key just ahead of its own until it goes, and
// then, first in line, the lock key. A release, a force release and an
// expiry all delete the lock key, and the first waiter then takes it with
// one Txn, if it is free and no queue key is older than its own: the key
// is never handed to a waiter that has died, since a dead waiter's queue
// key goes with its Driver's waiter lease, and then the next one takes it.
//
// A waiter whose ctx ends, or whose Driver closes, leaves the queue in the
// background, and its lock lease is revoked, which frees the key if the Txn
// that took it was lost with the wait.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.usableFor(ctx, key, owner); err != nil {
		return 0, err
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return 0, err
	}
	if !d.startWait() {
		return 0, ErrClosed
	}
	defer d.endWait()
	w := &waiter{d: d, k: keysFor(d.prefix, key), owner: owner, secs: secs}
	token, err := w.wait(ctx)
	w.stopRenewing()
	if err != nil {
		w.giveUp()
		return 0, d.fail(ctx, "acquire", err)
	}
	if w.acq.info.ttl != 0 {
		// Its age counts from its grant or reuse, before the wait: the
		// waiter's own renewals are not counted, so the pool errs on the
		// side of revoking it.
		d.held(w.acq)
	}
	return token, nil
}

// waiter is one AcquireWait call.
type waiter struct {
	d     *Driver
	k     lockKeys
	owner string
	secs  int64

	acq       *acquisitionLease // the lease that will hold the lock
	lease     int64             // its id
	renewals  <-chan *clientv3.LeaseKeepAliveResponse
	stopRenew context.CancelFunc
	leaseLost bool // the lock lease could not be kept alive: replace it

	qkey   string          // the waiter's queue key; "" while not queued
	qrev   int64           // its create revision
	lost   <-chan struct{} // closed when the waiter lease holding qkey is lost
	qlease int64           // that waiter lease

	pause time.Duration // before the next watch, after one that ended without an event
}

// queueState is what a waiter learnt of its key and queue at one revision.
type queueState struct {
	rev    int64  // the revision of the read
	queued bool   // the waiter's queue key exists
	ahead  string // the queue key just ahead of the waiter's; "" when it is first
	held   bool   // the lock key exists
}

// wait runs the wait until the waiter holds the key, and returns its token.
func (w *waiter) wait(ctx context.Context) (uint64, error) {
	acq, err := w.d.leaseFor(ctx, w.secs)
	if err != nil {
		return 0, err
	}
	w.acq, w.lease = acq, acq.id
	st, token, err := w.join(ctx)
	for err == nil && token == 0 {
		// A lock lease that could not be kept alive is replaced; the
		// waiter keeps its place.
		if err = w.freshLease(ctx); err != nil {
			break
		}
		if err = w.renew(); err != nil {
			break
		}
		switch {
		case !st.queued:
			// Out of the queue (its waiter lease was lost): queue again,
			// at the back.
			w.leave()
			st, token, err = w.join(ctx)
		case st.ahead != "":
			if _, err = w.watch(ctx, st.ahead, st.rev); err == nil {
				st, token, err = w.look(ctx)
			}
		case st.held:
			var ev *mvccpb.Event
			ev, err = w.watch(ctx, w.k.lock, st.rev)
			switch {
			case err != nil:
			case ev == nil:
				st, token, err = w.look(ctx)
			default:
				st, token, err = w.take(ctx)
			}
		default:
			st, token, err = w.take(ctx)
		}
		if errors.Is(err, errRequeue) {
			st, err = queueState{}, nil // handled as not queued
		}
	}
	return token, err
}

// took returns the token of a lock key that the waiter took by a Txn whose
// answer was lost, 0 when kv is not that. A key taken on a lock lease the
// waiter has replaced does not count: that lease is being revoked, and the
// key with it.
func (w *waiter) took(kv *mvccpb.KeyValue) uint64 {
	if !ownedBy(kv, w.owner) || kv.Lease != w.lease {
		return 0
	}
	w.leave() // the Txn that took the key deleted it, unless it was lost
	return uint64(kv.CreateRevision)
}

// join runs the joining Txn: take the key if it is free with nobody queued
// (or owner holds it already), else put the waiter at the back of the queue
// and read what it must watch.
func (w *waiter) join(ctx context.Context) (queueState, uint64, error) {
	for tries := 1; ; tries++ {
		st, token, err := w.joinOnce(ctx)
		if !errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) || tries == leaseTries {
			return st, token, err
		}
		// A lease is gone: a reused lock lease that could not be
		// renewed, or one that expired although kept alive (a
		// partition longer than its TTL). Replace what may be gone.
		w.leaseLost = true
		if w.acq.confirm() {
			w.d.waiters.abandon(w.d, w.qlease)
		}
	}
}

// joinOnce is one attempt of join.
func (w *waiter) joinOnce(ctx context.Context) (queueState, uint64, error) {
	if err := w.freshLease(ctx); err != nil {
		return queueState{}, 0, err
	}
	qlease, lost, err := w.d.waiters.get(ctx, w.d)
	if err != nil {
		return queueState{}, 0, err
	}
	w.qkey, w.qrev, w.lost, w.qlease = w.k.queue+randomID(), 0, lost, qlease
	value, qvalue := w.d.lockValue(w.owner), w.d.queueValue(w.owner)
	var resp *clientv3.TxnResponse
	err = w.d.call(ctx, nil, func(actx context.Context) error {
		var err error
		resp, err = w.d.kv.Txn(actx).
			If(freeAndUnqueued(w.k)...).
			Then(clientv3.OpPut(w.k.lock, value, clientv3.WithLease(clientv3.LeaseID(w.lease)))).
			Else(clientv3.OpTxn(heldBy(w.k.lock, w.owner),
				[]clientv3.Op{
					clientv3.OpPut(w.k.lock, "", clientv3.WithIgnoreValue(), clientv3.WithLease(clientv3.LeaseID(w.lease)), clientv3.WithPrevKV()),
				},
				[]clientv3.Op{
					clientv3.OpPut(w.qkey, qvalue, clientv3.WithLease(clientv3.LeaseID(qlease))),
					clientv3.OpGet(w.qkey, clientv3.WithKeysOnly()),
					clientv3.OpGet(w.k.lock, clientv3.WithCountOnly()),
					// The two youngest queue keys: the waiter's own and the
					// one ahead of it, unless a repeat of this Txn found
					// others queued after it.
					clientv3.OpGet(w.k.queue, clientv3.WithRange(w.k.queueEnd), clientv3.WithKeysOnly(),
						clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2)),
				})).
			Commit()
		return err
	})
	if err != nil {
		return queueState{}, 0, err
	}
	if token, previous := acquired(resp); token != 0 {
		w.qkey = "" // never queued
		if !w.acq.confirm() {
			// As in acquire: a reused lease that was not renewed may let
			// the lock go early. Take it again on a new lease (freshLease
			// revokes this one); the Txn finds owner holding the key and
			// moves it, unless the revocation came first.
			w.leaseLost = true
			return w.joinOnce(ctx)
		}
		if previous != w.lease {
			w.d.emptied(previous)
		}
		return queueState{}, token, nil
	}
	if !w.acq.confirm() {
		w.leaseLost = true // replaced before the waiter takes the key
	}
	queued := resp.Responses[0].GetResponseTxn().GetResponses()
	if len(queued) != 4 {
		return queueState{}, 0, errors.New("etcd: unexpected reply to the queueing Txn")
	}
	own := queued[1].GetResponseRange().GetKvs()
	if len(own) != 1 {
		return queueState{}, 0, errors.New("etcd: the queue key just written is missing")
	}
	w.qrev = own[0].CreateRevision
	youngest := queued[3].GetResponseRange().GetKvs()
	if len(youngest) == 0 || string(youngest[0].Key) != w.qkey {
		return w.look(ctx) // others queued after a repeat: find the one ahead
	}
	st := queueState{rev: resp.Header.Revision, queued: true, held: queued[2].GetResponseRange().GetCount() > 0}
	if len(youngest) == 2 {
		st.ahead = string(youngest[1].Key)
	}
	return st, 0, nil
}

// look reads, without writing, what the waiter must do next: whether its
// queue key is there, which queue key is ahead of it, and whether the lock
// is held. It is what a waiter does when the key ahead of it goes, since
// that waiter has most likely just taken the lock.
func (w *waiter) look(ctx context.Context) (queueState, uint64, error) {
	var resp *clientv3.TxnResponse
	err := w.d.call(ctx, nil, func(actx context.Context) error {
		var err error
		resp, err = w.d.kv.Txn(actx).Then(w.stateOps()...).Commit()
		return err
	})
	if err != nil {
		return queueState{}, 0, err
	}
	return w.state(resp.Header.Revision, resp.Responses)
}

// take runs the hand-off Txn: take the key if it is free, the waiter's
// queue key is still its own and no queue key is older; else read what take
// found instead.
func (w *waiter) take(ctx context.Context) (queueState, uint64, error) {
	value := w.d.lockValue(w.owner)
	var resp *clientv3.TxnResponse
	err := w.d.call(ctx, nil, func(actx context.Context) error {
		var err error
		resp, err = w.d.kv.Txn(actx).
			If(
				clientv3.Compare(clientv3.CreateRevision(w.k.lock), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(w.qkey), "=", w.qrev),
				clientv3.Compare(clientv3.CreateRevision(w.k.queue), ">", w.qrev-1).WithRange(w.k.queueEnd),
			).
			Then(
				clientv3.OpPut(w.k.lock, value, clientv3.WithLease(clientv3.LeaseID(w.lease))),
				clientv3.OpDelete(w.qkey),
			).
			Else(w.stateOps()...).
			Commit()
		return err
	})
	if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
		w.leaseLost = true // expired although kept alive: take it with a new one
		return queueState{rev: 0, queued: true}, 0, nil
	}
	if err != nil {
		return queueState{}, 0, err
	}
	if resp.Succeeded {
		w.qkey = ""
		return queueState{}, uint64(resp.Header.Revision), nil
	}
	return w.state(resp.Header.Revision, resp.Responses)
}

// stateOps are the reads that look and take's Else branch make: the lock
// key, the waiter's queue key, and the youngest queue key older than it.
func (w *waiter) stateOps() []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(w.k.lock),
		clientv3.OpGet(w.qkey, clientv3.WithKeysOnly()),
		clientv3.OpGet(w.k.queue, clientv3.WithRange(w.k.queueEnd), clientv3.WithKeysOnly(),
			clientv3.WithMaxCreateRev(w.qrev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1)),
	}
}

// state decodes the responses to stateOps read at rev. A lock key that
// names the waiter's owner, on its lease, means an earlier attempt of take,
// whose answer was lost, took it: the wait is over.
func (w *waiter) state(rev int64, responses []*pb.ResponseOp) (queueState, uint64, error) {
	if len(responses) != 3 {
		return queueState{}, 0, errors.New("etcd: unexpected reply to the queue read")
	}
	lock := responses[0].GetResponseRange().GetKvs()
	if len(lock) == 1 {
		if token := w.took(lock[0]); token != 0 {
			return queueState{}, token, nil
		}
	}
	st := queueState{
		rev:    rev,
		queued: len(responses[1].GetResponseRange().GetKvs()) == 1,
		held:   len(lock) == 1,
	}
	if ahead := responses[2].GetResponseRange().GetKvs(); len(ahead) == 1 {
		st.ahead = string(ahead[0].Key)
	}
	return st, 0, nil
}

// watch waits for key, which existed at revision rev, to be deleted, and
// returns the delete. It returns no event and no error when the caller
// should read the state again: every recheckEvery, and when the watch ended
// without telling (after a pause, so that a watch that keeps failing is not
// spun on).
//
// The watch starts at the revision the server is at when it registers it,
// not at rev+1: a watch from a revision the server has passed is
// "unsynced", and etcd delivers its events only on its next catch-up pass,
// up to 100ms later, which under contention would be nearly every hand-off
// (concurrency.Mutex pays that). Nothing between rev and the registration
// is lost: when the server had moved on, the waiter reads whether key is
// still there once the watch is registered.
func (w *waiter) watch(ctx context.Context, key string, rev int64) (*mvccpb.Event, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	events := w.d.watcher.Watch(wctx, key, clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	recheck := time.NewTimer(recheckEvery)
	defer recheck.Stop()
	for {
		select {
		case resp, ok := <-events:
			if !ok || resp.Canceled || resp.Err() != nil {
				return nil, w.pauseAfterFailedWatch(ctx)
			}
			if resp.Created {
				if resp.Header.Revision <= rev {
					continue // nothing has happened since the read
				}
				exists, err := w.exists(ctx, key)
				switch {
				case err != nil:
					return nil, err
				case !exists:
					return &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key)}}, nil
				}
				continue
			}
			for _, ev := range resp.Events {
				if ev.Type == mvccpb.DELETE {
					w.pause = 0
					return ev, nil
				}
			}
		case <-recheck.C:
			return nil, nil
		case _, ok := <-w.renewals:
			if !ok {
				w.renewals, w.leaseLost = nil, true
				return nil, nil // read again, with a new lease
			}
		case <-w.lost:
			return nil, errRequeue
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.d.closing:
			return nil, ErrClosed
		}
	}
}

// exists reads whether key exists now.
func (w *waiter) exists(ctx context.Context, key string) (bool, error) {
	var exists bool
	err := w.d.call(ctx, nil, func(actx context.Context) error {
		resp, err := w.d.kv.Get(actx, key, clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		exists = resp.Count > 0
		return nil
	})
	return exists, err
}

// pauseAfterFailedWatch waits before the next read and watch, doubling the
// pause each time in a row.
func (w *waiter) pauseAfterFailedWatch(ctx context.Context) error {
	w.pause = min(max(2*w.pause, watchPause), lastBackoff)
	t := time.NewTimer(w.pause)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.d.closing:
		return ErrClosed
	}
}

// freshLease replaces the lock lease if it was lost: it expired, or could
// not be renewed, while the waiter waited.
func (w *waiter) freshLease(ctx context.Context) error {
	if !w.leaseLost {
		return nil
	}
	w.stopRenewing()
	w.d.abandon(w.acq)
	sent := time.Now()
	lease, ttl, err := w.d.grant(ctx, w.secs)
	if err != nil {
		return err
	}
	w.acq = &acquisitionLease{id: lease, info: leaseInfo{secs: w.secs, ttl: ttl, renewed: sent}, renewedOK: true}
	w.lease, w.leaseLost = lease, false
	return nil
}

// renew starts keeping the lock lease alive, if it is not kept alive yet:
// from when the waiter first has to wait until it holds the key or gives up.
func (w *waiter) renew() error {
	if w.stopRenew != nil || w.leaseLost {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	renewals, err := w.d.lessor.KeepAlive(ctx, clientv3.LeaseID(w.lease))
	if err != nil {
		stop()
		return err
	}
	w.renewals, w.stopRenew = renewals, stop
	return nil
}

// stopRenewing stops keeping the lock lease alive: once the waiter holds
// the key, the engine's refreshes keep it, and nothing else may.
func (w *waiter) stopRenewing() {
	if w.stopRenew != nil {
		w.stopRenew()
		w.stopRenew, w.renewals = nil, nil
	}
}

// leave deletes the waiter's queue key in the background. If that cannot
// be done, the Driver's waiter lease is given up instead, so that the key
// goes with it rather than staying at the head of the queue for as long as
// the Driver lives.
func (w *waiter) leave() {
	if w.qkey == "" {
		return
	}
	qkey, qrev, qlease := w.qkey, w.qrev, w.qlease
	w.qkey = ""
	if qrev == 0 {
		// The queueing Txn's answer was lost with the wait: it may have
		// written qkey, or may still, since the server can apply a
		// request after its caller gave up. A delete could come first;
		// revoking the waiter lease cannot be outrun: it deletes qkey if
		// it is there, and a Txn applied after it fails on the lease.
		// The Driver's other waiters see the lease go and queue again.
		w.d.waiters.abandon(w.d, qlease)
		return
	}
	started := w.d.later(func(ctx context.Context) error {
		err := w.d.retry(ctx, nil, nil, func(actx context.Context) error {
			_, err := w.d.kv.Txn(actx).
				If(clientv3.Compare(clientv3.CreateRevision(qkey), "=", qrev)).
				Then(clientv3.OpDelete(qkey)).
				Commit()
			return err
		})
		if err != nil {
			w.d.waiters.abandon(w.d, qlease)
		}
		return err
	})
	if !started {
		w.d.waiters.abandon(w.d, qlease)
	}
}

// giveUp cleans up after a wait that failed: it leaves the queue, and
// revokes the lock lease, which deletes the lock key too if a Txn of the
// wait took it and its answer was lost with the wait.
func (w *waiter) giveUp() {
	w.leave()
	if w.acq != nil {
		w.d.abandon(w.acq)
	}
}

// startWait counts an AcquireWait call that Close must wait for, and
// reports false when Close has already begun waiting.
func (d *Driver) startWait() bool {
	d.waitsMu.Lock()
	defer d.waitsMu.Unlock()
	if d.waitsDone {
		return false
	}
	d.waits++
	return true
}

// endWait ends what startWait began, waking Close after the last one.
func (d *Driver) endWait() {
	d.waitsMu.Lock()
	defer d.waitsMu.Unlock()
	d.waits--
	if d.waits == 0 && d.waitsIdle != nil {
		close(d.waitsIdle)
		d.waitsIdle = nil
	}
}

// waitForWaits stops new AcquireWait calls and waits, up to bound, for the
// running ones, which Close has woken, to return.
func (d *Driver) waitForWaits(bound time.Duration) {
	d.waitsMu.Lock()
	d.waitsDone = true
	var idle chan struct{}
	if d.waits > 0 {
		idle = make(chan struct{})
		d.waitsIdle = idle
	}
	d.waitsMu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}
