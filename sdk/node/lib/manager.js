'use strict';
// manager.js is LockManager and the locks it hands out, over the C ABI's
// event-loop form: zl_hold takes a key and holds it in the background (the
// engine waits, refreshes and detects loss on its own goroutines), and the
// manager's zl_notify_fd socket says when a hold has changed. Nothing here
// parks a thread while it waits or while a lock is held: waiting costs a
// socket the event loop watches, not a thread of libuv's pool.

const net = require('node:net');
const native = require('./native.js');
const { abi, library, check, checkAsync, errorOf, lastError, readString, out } = native;
const { Code, LockClosedError, LockInvalidArgumentError, LockInvalidHandleError, LockLostError, LockNotAcquiredError } = abi;

const MAX_TTL_MS = 365 * 24 * 3600 * 1000;

// The managers still open, closed when the process exits so that what they
// hold is released now rather than when its TTL runs out.
const open = new Set();
process.once('exit', () => {
  for (const m of open) m.closeSync();
});

// Hold is one zl_hold: a promise for the grant and one for the end, and the
// listeners of the lock's loss.
class Hold {
  constructor(manager, key, ttlMs, options, signal, keepAlive = false) {
    this.manager = manager;
    this.keepAlive = keepAlive;
    this.key = key;
    this.state = 'waiting'; // then 'held', then 'ended'
    this.outcome = null; // the error the hold ended with, or null
    this.lostListeners = [];
    this.lost = false;
    this.granted = new Promise((resolve, reject) => {
      this.grant = resolve;
      this.refuse = reject;
    });
    this.granted.catch(() => {}); // a caller that never awaits it is told by ended
    this.ended = new Promise((resolve) => {
      this.finish = resolve;
    });
    this.signal = signal;
    this.handle = out('zl_hold', manager.handle, key, ttlMs, options);
    manager.notifier.watch(this);
    if (signal) {
      this.onAbort = () => this.cancel();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    this.check(); // a bad key or TTL ends the hold at once
  }

  // check looks at the hold after a wake-up: every call here returns at
  // once. It runs in the socket's event handlers, so it never throws.
  check() {
    try {
      this.look();
    } catch (err) {
      if (this.state !== 'ended') this.settle(err);
    }
  }

  look() {
    if (this.state === 'ended') return;
    const f = library();
    const done = out('zl_hold_done', this.handle);
    if (this.state === 'waiting' && !done && out('zl_is_acquired', this.handle) && !out('zl_lost', this.handle)) {
      this.state = 'held';
      // The caller's signal cancels a wait; once the lock is held, letting
      // it go is the caller's decision (its callback sees the signal).
      if (this.signal) this.signal.removeEventListener('abort', this.onAbort);
      this.manager.notifier.update();
      this.grant();
    }
    if (this.state === 'held' && !this.lost && (done || out('zl_lost', this.handle))) {
      this.lost = true;
      for (const fn of this.lostListeners) fn();
    }
    if (!done) return;
    // The hold is over: zl_free returns its outcome at once.
    const code = f.zl_free(this.handle);
    this.settle(code === Code.OK ? null : errorOf(code, lastError(), this.key));
  }

  // settle records the outcome and settles the promises.
  settle(outcome) {
    this.outcome = outcome;
    const wasHeld = this.state === 'held';
    if (wasHeld && !this.lost) {
      this.lost = true;
      for (const fn of this.lostListeners) fn();
    }
    this.state = 'ended';
    this.manager.notifier.unwatch(this);
    if (this.signal) this.signal.removeEventListener('abort', this.onAbort);
    if (!wasHeld) {
      const aborted = this.signal && this.signal.aborted;
      this.refuse(aborted ? this.signal.reason : this.outcome || new LockLostError(`lock "${this.key}" was lost as it was granted`));
    }
    this.finish(this.outcome);
  }

  // handleWhileHeld is the zl_lock handle for calls on the held lock.
  handleWhileHeld() {
    return this.state === 'held' ? this.handle : 0;
  }

  onLost(fn) {
    if (this.lost) fn();
    else this.lostListeners.push(fn);
  }

  // cancel ends the hold in the background: a wait stops, a lock is let go.
  cancel() {
    if (this.state === 'ended' || this.canceled) return;
    this.canceled = true;
    check(library().zl_cancel(this.handle));
    this.manager.notifier.update();
  }

  // end lets the hold go and resolves with its outcome (an error, or null).
  end() {
    this.cancel();
    return this.ended;
  }

  // pending says whether the hold keeps the process alive: someone awaits
  // its grant or its end, or a try or block callback runs under it (which
  // may be waiting for nothing but its signal, as a leader does).
  pending() {
    return this.state === 'waiting' || (this.state === 'held' && (this.canceled || this.keepAlive));
  }
}

// Notifier is a manager's zl_notify_fd socket and the holds that wait on
// it. The socket keeps the process alive only while a hold is pending: a
// lock a ManagedLock merely holds does not (the process may exit, and
// releases it then), just as a pending promise does not.
class Notifier {
  constructor(manager) {
    this.holds = new Set();
    this.socket = null;
    this.manager = manager;
  }

  watch(hold) {
    if (!this.socket) {
      const fd = out('zl_notify_fd', this.manager.handle);
      this.socket = new net.Socket({ fd, readable: true, writable: false });
      this.socket.on('data', () => this.scan());
      this.socket.on('end', () => this.scan());
      this.socket.on('error', () => this.scan());
    }
    this.holds.add(hold);
    this.update();
  }

  unwatch(hold) {
    this.holds.delete(hold);
    this.update();
  }

  scan() {
    for (const h of [...this.holds]) h.check();
  }

  update() {
    if (!this.socket) return;
    let pending = false;
    for (const h of this.holds) pending = pending || h.pending();
    if (pending) this.socket.ref();
    else this.socket.unref();
  }

  close() {
    this.scan();
    if (this.socket) this.socket.destroy();
    this.socket = null;
  }
}

// LockView reads what a lock handle tells without waiting: key, owner,
// fencing token, expiry.
class LockView {
  /** @returns {number} the zl_lock handle, or 0 when nothing is held */
  handleForRead() {
    return 0;
  }

  get owner() {
    const h = this.handleForRead();
    return h ? readString('zl_owner', h) : '';
  }

  get token() {
    const h = this.handleForRead();
    return h ? out('zl_token', h) : 0;
  }

  get expiresAt() {
    const h = this.handleForRead();
    const ms = h ? out('zl_expires_at', h) : 0;
    return ms ? new Date(ms) : null;
  }

  get isAcquired() {
    const h = this.handleForRead();
    return h ? out('zl_is_acquired', h) === 1 : false;
  }
}

// HeldLock is the lock a try or block callback runs under.
class HeldLock extends LockView {
  #hold;
  constructor(hold) {
    super();
    this.#hold = hold;
  }

  get key() {
    return this.#hold.key;
  }

  handleForRead() {
    return this.#hold.handleWhileHeld();
  }

  /** Extends the lock by its TTL if still held; resolves with whether it was. */
  async refresh() {
    return refreshHandle(this.#hold);
  }
}

async function refreshHandle(hold) {
  const h = hold ? hold.handleWhileHeld() : 0;
  if (!h) return false;
  const still = [0];
  try {
    await checkAsync(hold.key, 'zl_refresh', h, still);
  } catch (err) {
    // The hold ended (and its handle went) while the refresh ran.
    if (err instanceof LockInvalidHandleError) return false;
    throw err;
  }
  return still[0] === 1;
}

// ManagedLock is a handle on one key for explicit acquire and release
// (LockManager.make). Each acquisition is a hold without background
// refresh: the TTL runs from the acquire or the last refresh, as in Go.
class ManagedLock extends LockView {
  #manager;
  #key;
  #ttlMs;
  #hold = null;
  #queue = Promise.resolve(); // operations run one at a time, as in Go

  constructor(manager, key, ttlSeconds) {
    super();
    this.#manager = manager;
    this.#key = validKey(key);
    this.#ttlMs = ttlMillis(ttlSeconds);
  }

  get key() {
    return this.#key;
  }

  handleForRead() {
    return this.#hold ? this.#hold.handleWhileHeld() : 0;
  }

  #serial(fn) {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  // #take starts a hold and waits for the grant.
  async #take(timeoutMs, retryDelayMs, signal) {
    this.#manager.usable();
    const hold = new Hold(this.#manager, this.#key, this.#ttlMs, holdOptions({ timeoutMs, retryDelayMs }), signal);
    this.#hold = hold;
    try {
      await hold.granted;
    } catch (err) {
      this.#hold = null;
      throw err;
    }
  }

  /** Tries once to take the lock; resolves with whether it did. */
  acquire() {
    return this.#serial(async () => {
      if (this.isAcquired) {
        const acquired = [0];
        try {
          await checkAsync(this.#key, 'zl_acquire', this.#hold.handle, acquired);
          return acquired[0] === 1;
        } catch (err) {
          if (!(err instanceof LockInvalidHandleError)) throw err;
          // The hold ended while the call ran: take the key anew.
        }
      }
      await this.#drop();
      try {
        await this.#take(0);
        return true;
      } catch (err) {
        if (err instanceof LockNotAcquiredError) return false;
        throw err;
      }
    });
  }

  /**
   * Waits up to timeoutSeconds (default: the TTL) for the lock, polling
   * every retryDelayMs where the driver cannot say when it is freed; rejects
   * with LockNotAcquiredError when the time runs out.
   */
  block(timeoutSeconds, retryDelayMs, options = {}) {
    return this.#serial(async () => {
      const timeoutMs = timeoutSeconds === undefined ? undefined : millis(timeoutSeconds, 'timeoutSeconds');
      const retry = retryDelayMs === undefined ? undefined : retryMillis(retryDelayMs, 'retryDelayMs');
      const signal = validSignal(checkOptions(options, ['signal'], 'options').signal);
      if (this.isAcquired) return;
      await this.#drop();
      await this.#take(timeoutMs, retry, signal);
    });
  }

  /** Releases the lock if this handle holds it; a no-op otherwise. */
  release() {
    return this.#serial(() => this.#drop());
  }

  async #drop() {
    const hold = this.#hold;
    this.#hold = null;
    if (!hold) return;
    const outcome = await hold.end();
    // A lock that expired or was taken over is not ours to release.
    if (outcome && !(outcome instanceof LockLostError)) throw outcome;
  }

  /** Extends the lock by its TTL if still held; resolves with whether it was. */
  refresh() {
    return this.#serial(() => refreshHandle(this.#hold));
  }

  /** Frees the key whoever holds it: for administration and recovery. */
  forceRelease() {
    return this.#serial(async () => {
      this.#manager.usable();
      const f = library();
      const l = out('zl_make', this.#manager.handle, this.#key, this.#ttlMs);
      try {
        await checkAsync(this.#key, 'zl_force_release', l);
      } finally {
        f.zl_free(l);
      }
    });
  }
}

// LockManager takes locks on one backend under one key prefix.
class LockManager {
  #closed = false;
  #closing = null;

  /** Opens a manager on config (LockConfig), or on the environment's when it is omitted. */
  constructor(config) {
    const json = config === undefined || config === null ? null : configJSON(config);
    this.handle = out('zl_open', json);
    this.notifier = new Notifier(this);
    open.add(this);
  }

  /** Whether close has been called. */
  get closed() {
    return this.#closed;
  }

  usable() {
    if (this.#closed) throw new LockClosedError('the lock manager is closed');
  }

  /**
   * Acquires key once and runs fn under it; rejects with
   * LockNotAcquiredError without running fn when the key is held.
   */
  try(key, ttlSeconds, fn, options = {}) {
    return this.#run(key, ttlSeconds, fn, options, true);
  }

  /** Waits for key, up to options.timeout seconds (default: the TTL), then runs fn under it. */
  block(key, ttlSeconds, fn, options = {}) {
    return this.#run(key, ttlSeconds, fn, options, false);
  }

  /** Returns a handle on key, not acquired yet. */
  make(key, ttlSeconds) {
    this.usable();
    return new ManagedLock(this, key, ttlSeconds);
  }

  async #run(key, ttlSeconds, fn, options, once) {
    this.usable();
    key = validKey(key);
    const ttlMs = ttlMillis(ttlSeconds);
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    const allowed = once ? ['refresh', 'refreshEvery', 'signal'] : ['timeout', 'retryDelay', 'refresh', 'refreshEvery', 'signal'];
    const o = checkOptions(options, allowed, 'options');
    const signal = validSignal(o.signal);
    signal?.throwIfAborted();
    const hold = new Hold(
      this,
      key,
      ttlMs,
      holdOptions({
        timeoutMs: once ? 0 : o.timeout === undefined ? undefined : millis(o.timeout, 'options.timeout'),
        retryDelayMs: o.retryDelay === undefined ? undefined : retryMillis(o.retryDelay, 'options.retryDelay'),
        refresh: o.refresh === undefined ? false : validBool(o.refresh, 'options.refresh'),
        refreshEveryMs: o.refreshEvery === undefined ? undefined : positiveMillis(o.refreshEvery, 'options.refreshEvery'),
      }),
      signal,
      true,
    );
    await hold.granted;

    // The callback's signal aborts when the lock is lost (or the manager
    // closes), and when the caller's own signal does.
    const controller = new AbortController();
    hold.onLost(() => controller.abort(new LockLostError(`lock "${key}" was lost: stop, the work is no longer exclusive`)));
    const forward = () => controller.abort(signal.reason);
    signal?.addEventListener('abort', forward, { once: true });
    let value;
    let failure;
    let failed = false;
    try {
      value = await fn(new HeldLock(hold), controller.signal);
    } catch (err) {
      failed = true;
      failure = err;
    } finally {
      signal?.removeEventListener('abort', forward);
    }
    const outcome = await hold.end();
    if (outcome) {
      if (failed) outcome.cause = failure;
      throw outcome;
    }
    if (failed) throw failure;
    return value;
  }

  /**
   * Closes the manager: running callbacks see their signal abort, waits
   * end, what it holds is released, the backend closed. Idempotent.
   */
  close() {
    if (!this.#closing) {
      this.#closed = true;
      open.delete(this);
      this.#closing = native.callAsync('zl_close', this.handle).then((code) => {
        this.notifier.close();
        if (code !== Code.OK && code !== Code.INVALID_HANDLE) throw errorOf(code, library().zl_strerror(code));
      });
    }
    return this.#closing;
  }

  // closeSync closes on the calling thread, at process exit.
  closeSync() {
    if (this.#closing) return;
    this.#closed = true;
    this.#closing = Promise.resolve();
    open.delete(this);
    library().zl_close(this.handle);
  }
}

// holdOptions fills zl_options; an undefined field keeps its default.
function holdOptions({ timeoutMs, retryDelayMs, refresh, refreshEveryMs }) {
  const o = { timeout_ms: 0, timeout_set: 0, retry_delay_ms: 0, refresh: refresh ? 1 : 0, refresh_every_ms: 0 };
  if (timeoutMs !== undefined) {
    o.timeout_ms = timeoutMs;
    o.timeout_set = 1;
  }
  if (retryDelayMs !== undefined) o.retry_delay_ms = retryDelayMs;
  if (refreshEveryMs !== undefined) o.refresh_every_ms = refreshEveryMs;
  return o;
}

// Arguments are checked here when C could not carry them faithfully (a
// NUL ends a C string, a lone surrogate has no UTF-8) or when a wrong type
// would turn into something else on its way; the engine checks the rest
// (an empty or over-long key) and names the argument.
function validKey(key) {
  if (typeof key !== 'string') throw new TypeError(`key must be a string, got ${typeName(key)}`);
  if (key.includes('\0')) throw new LockInvalidArgumentError('invalid key: must not contain NUL characters');
  if (!key.isWellFormed()) throw new LockInvalidArgumentError('invalid key: is not well-formed Unicode (a lone surrogate)');
  return key;
}

function number(v, name) {
  if (typeof v !== 'number') throw new TypeError(`${name} must be a number, got ${typeName(v)}`);
  if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number, got ${v}`);
  return v;
}

// millis converts seconds to whole milliseconds: 0 or more.
function millis(seconds, name) {
  if (number(seconds, name) < 0) throw new RangeError(`${name} must not be negative, got ${seconds}`);
  return Math.round(seconds * 1000);
}

function positiveMillis(seconds, name) {
  const ms = millis(seconds, name);
  if (ms < 1) throw new RangeError(`${name} must be at least 0.001 seconds (1 ms), got ${seconds}`);
  return ms;
}

function ttlMillis(seconds) {
  const ms = positiveMillis(seconds, 'ttlSeconds');
  if (ms > MAX_TTL_MS) throw new RangeError(`ttlSeconds must be at most 365 days (31536000), got ${seconds}`);
  return ms;
}

// retryMillis checks a retry delay, given in milliseconds.
function retryMillis(ms, name) {
  if (number(ms, name) < 1) throw new RangeError(`${name} must be at least 1 (milliseconds), got ${ms}`);
  return Math.round(ms);
}

function validBool(v, name) {
  if (typeof v !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${typeName(v)}`);
  return v;
}

function validSignal(signal) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`options.signal must be an AbortSignal, got ${typeName(signal)}`);
  }
  return signal;
}

function checkOptions(options, allowed, name) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new TypeError(`${name} must be an object, got ${typeName(options)}`);
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) throw new TypeError(`${name}.${k} is not an option here (options: ${allowed.join(', ')})`);
  }
  return options;
}

function typeName(v) {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v;
}

// configJSON is the configuration as zl_open reads it.
function configJSON(config) {
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`config must be an object (see LockConfig), got ${typeName(config)}`);
  }
  const json = JSON.stringify(config);
  if (!json.isWellFormed()) throw new LockInvalidArgumentError('invalid config: holds text that is not well-formed Unicode');
  return json;
}

module.exports = { LockManager, ManagedLock, HeldLock };
