'use strict';
// The API the zerotal documentation shows: try, block and make, errors,
// the AbortSignal, configuration, close.

const test = require('node:test');
const assert = require('node:assert/strict');
const lock = require('..');
const { Lock, LockManager, LockConfig, LockError, LockNotAcquiredError, LockLostError, LockClosedError, LockInvalidArgumentError, Code } = lock;
const { memory, sqliteFile, until } = require('./helpers.js');

test('try runs the callback under the lock and returns its value', async (t) => {
  const m = memory(t);
  const value = await m.try('invoice:123', 10, async (held, signal) => {
    assert.equal(held.key, 'invoice:123');
    assert.equal(held.isAcquired, true);
    assert.match(held.owner, /^[0-9a-f]{32}$/);
    assert.ok(held.token > 0);
    assert.ok(held.expiresAt instanceof Date && held.expiresAt > new Date());
    assert.ok(signal instanceof AbortSignal && !signal.aborted);
    return 42;
  });
  assert.equal(value, 42);
  // Released: the key is free again.
  assert.equal(await m.try('invoice:123', 10, () => 'again'), 'again');
});

test('try on a held key rejects with LockNotAcquiredError, status 409, without running fn', async (t) => {
  const m = memory(t);
  await m.try('k', 10, async () => {
    let ran = false;
    const err = await m.try('k', 10, () => (ran = true)).catch((e) => e);
    assert.equal(ran, false);
    assert.ok(err instanceof LockNotAcquiredError);
    assert.ok(err instanceof Lock.NotAcquired);
    assert.ok(err instanceof LockError && err instanceof Error);
    assert.equal(err.status, 409);
    assert.equal(err.code, Code.NOT_ACQUIRED);
    assert.equal(err.codeName, 'NOT_ACQUIRED');
    assert.equal(err.key, 'k');
    assert.match(err.message, /"k" not acquired/);
  });
});

test("the callback's error comes back unchanged, after the release", async (t) => {
  const m = memory(t);
  const boom = new Error('boom');
  await assert.rejects(m.try('k', 10, async () => { throw boom; }), (e) => e === boom);
  assert.equal(await m.try('k', 10, () => 1), 1);
});

test('block waits for the key, and times out with LockNotAcquiredError', async (t) => {
  const m = memory(t);
  const held = m.make('report', 10);
  assert.equal(await held.acquire(), true);
  const started = Date.now();
  const waiting = m.block('report', 10, () => Date.now() - started, { timeout: 5, retryDelay: 20 });
  setTimeout(() => held.release(), 200);
  const waited = await waiting;
  assert.ok(waited >= 150, `waited ${waited} ms`);

  await held.acquire();
  const err = await m.block('report', 10, () => 1, { timeout: 0.2 }).catch((e) => e);
  assert.ok(err instanceof LockNotAcquiredError, String(err));
  assert.match(err.message, /after waiting/);
  await held.release();
});

test('make returns a ManagedLock with acquire, block, release, refresh and forceRelease', async (t) => {
  const m = memory(t);
  const a = m.make('payment:456', 15);
  const b = m.make('payment:456', 15);
  assert.equal(a.key, 'payment:456');
  assert.equal(a.isAcquired, false);
  assert.equal(a.owner, '');
  assert.equal(a.token, 0);
  assert.equal(a.expiresAt, null);
  assert.equal(await a.acquire(), true);
  assert.equal(a.isAcquired, true);
  const first = a.token;
  assert.equal(await b.acquire(), false);
  assert.equal(await a.refresh(), true);
  assert.equal(await a.acquire(), true, 'acquire on a held lock resets its TTL');
  await a.release();
  assert.equal(a.isAcquired, false);
  await a.release(); // a no-op
  await b.block(1);
  assert.ok(b.token > first, 'tokens increase');
  await a.forceRelease();
  assert.equal(await b.refresh(), false, 'refresh reports the lock gone');
  assert.equal(b.isAcquired, false);
  await b.release(); // a no-op: the lock is gone
  assert.equal(await a.acquire(), true);
  const err = await b.block(0.1, 10).catch((e) => e);
  assert.ok(err instanceof LockNotAcquiredError);
  await a.release();
});

test('a ManagedLock not refreshed expires after its TTL', async (t) => {
  const m = memory(t);
  const a = m.make('short', 0.2);
  assert.equal(await a.acquire(), true);
  await until(() => !a.isAcquired, 3000);
  assert.equal(await m.make('short', 1).acquire(), true);
});

test('the signal aborts when the lock is lost, and try rejects with LockLostError', async (t) => {
  const prefix = `lost-${Date.now()}:`;
  const m = memory(t, prefix);
  const other = memory(t, prefix); // another manager on the same keys
  const started = Date.now();
  let aborted = -1;
  const err = await m
    .try(
      'lost',
      5,
      async (held, signal) => {
        await other.make('lost', 1).forceRelease(); // someone else frees our key
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        aborted = Date.now() - started;
        assert.ok(signal.reason instanceof LockLostError);
        return 'finished anyway';
      },
      { refresh: true, refreshEvery: 0.1 },
    )
    .catch((e) => e);
  assert.ok(err instanceof LockLostError, String(err));
  assert.ok(err instanceof Lock.Lost);
  assert.equal(err.code, Code.LOST);
  assert.ok(aborted >= 0 && aborted < 2000, `aborted after ${aborted} ms (refresh every 100 ms)`);
});

test('without refresh, outliving the TTL aborts the signal at the expiry', async (t) => {
  const m = memory(t);
  const started = Date.now();
  const failure = new Error('stopped');
  const err = await m
    .try('expiry', 0.3, async (held, signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      throw failure;
    })
    .catch((e) => e);
  const took = Date.now() - started;
  assert.ok(err instanceof LockLostError, String(err));
  assert.equal(err.cause, failure, "fn's error is the loss's cause");
  assert.ok(took >= 250 && took < 3000, `lost after ${took} ms for a 300 ms TTL`);
});

test('an AbortSignal in the options cancels a wait', async (t) => {
  const m = memory(t);
  const held = m.make('busy', 10);
  await held.acquire();
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 100);
  let ran = false;
  const err = await m.block('busy', 10, () => (ran = true), { timeout: 30, signal: controller.signal }).catch((e) => e);
  assert.equal(err.name, 'AbortError');
  assert.equal(ran, false);
  assert.ok(Date.now() - started < 5000);
  const mine = new AbortController();
  mine.abort(new Error('mine'));
  await assert.rejects(m.block('busy', 10, () => 1, { signal: mine.signal }), /mine/);
  const c2 = new AbortController();
  setTimeout(() => c2.abort(), 50);
  await assert.rejects(m.make('busy', 1).block(10, 10, { signal: c2.signal }), { name: 'AbortError' });
  await held.release();
  assert.equal(await m.try('busy', 1, () => 'free'), 'free', 'a cancelled wait holds nothing');
});

test('bad input is refused with an error naming the argument, before the backend is touched', async (t) => {
  const m = memory(t);
  const fn = () => 1;
  await assert.rejects(m.try(42, 10, fn), { name: 'TypeError', message: /key must be a string/ });
  await assert.rejects(m.try('', 10, fn), (e) => e instanceof LockInvalidArgumentError && /key/.test(e.message));
  await assert.rejects(m.try('a\0b', 10, fn), (e) => e instanceof LockInvalidArgumentError && /NUL/.test(e.message));
  await assert.rejects(m.try('\ud800', 10, fn), (e) => e instanceof LockInvalidArgumentError && /surrogate/.test(e.message));
  await assert.rejects(m.try('x'.repeat(2000), 10, fn), (e) => e instanceof LockInvalidArgumentError && /key/.test(e.message));
  await assert.rejects(m.try('k', '10', fn), { name: 'TypeError', message: /ttlSeconds/ });
  await assert.rejects(m.try('k', 0, fn), { name: 'RangeError', message: /ttlSeconds/ });
  await assert.rejects(m.try('k', -1, fn), { name: 'RangeError', message: /ttlSeconds/ });
  await assert.rejects(m.try('k', NaN, fn), { name: 'RangeError', message: /ttlSeconds/ });
  await assert.rejects(m.try('k', Infinity, fn), { name: 'RangeError', message: /ttlSeconds/ });
  await assert.rejects(m.try('k', 1e12, fn), { name: 'RangeError', message: /365 days/ });
  await assert.rejects(m.try('k', 10, 'fn'), { name: 'TypeError', message: /fn must be a function/ });
  await assert.rejects(m.try('k', 10, fn, { timeout: 1 }), { name: 'TypeError', message: /options.timeout is not an option here/ });
  await assert.rejects(m.block('k', 10, fn, { timeout: -1 }), { name: 'RangeError', message: /options.timeout/ });
  await assert.rejects(m.block('k', 10, fn, { retryDelay: 0 }), { name: 'RangeError', message: /options.retryDelay/ });
  await assert.rejects(m.block('k', 10, fn, { refreshEvery: 0 }), { name: 'RangeError', message: /options.refreshEvery/ });
  await assert.rejects(m.block('k', 10, fn, { refresh: 'yes' }), { name: 'TypeError', message: /options.refresh/ });
  await assert.rejects(m.block('k', 10, fn, { signal: {} }), { name: 'TypeError', message: /AbortSignal/ });
  await assert.rejects(m.block('k', 10, fn, null), { name: 'TypeError', message: /options must be an object/ });
  await assert.rejects(m.block('k', 1, fn, { refreshEvery: 5 }), (e) => e instanceof LockInvalidArgumentError && /refresh/i.test(e.message));
  assert.throws(() => m.make('k', 0), { name: 'RangeError' });
  await assert.rejects(m.make('k', 1).block('1'), { name: 'TypeError', message: /timeoutSeconds/ });
  assert.throws(() => new LockManager({ driver: 'nope' }), (e) => e instanceof LockInvalidArgumentError && /nope/.test(e.message) && /memory/.test(e.message));
  assert.throws(() => new LockManager({ drivr: 'memory' }), (e) => e instanceof LockInvalidArgumentError && /drivr/.test(e.message));
  assert.throws(() => new LockManager('memory'), { name: 'TypeError' });
  assert.throws(() => LockConfig(7), { name: 'TypeError' });
  // The manager still works.
  assert.equal(await m.try('k', 1, fn), 1);
});

test('close is idempotent, and a closed manager rejects with LockClosedError', async () => {
  const m = new LockManager(LockConfig({ prefix: 'close:' }));
  const held = m.make('k', 10);
  await held.acquire();
  let signalled;
  let entered = false;
  const running = m
    .try('running', 10, async (_, signal) => {
      entered = true;
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      signalled = signal.reason;
    })
    .catch((e) => e);
  await until(() => entered);
  const waiting = m.block('k', 10, () => 1, { timeout: 30 }).catch((e) => e);
  await m.close();
  await m.close();
  assert.equal(m.closed, true);
  const ran = await running;
  assert.ok(ran instanceof LockClosedError, String(ran));
  assert.ok(signalled instanceof LockLostError, 'the running callback saw its signal abort');
  assert.ok((await waiting) instanceof LockClosedError);
  await assert.rejects(m.try('k', 1, () => 1), (e) => e instanceof LockClosedError);
  await assert.rejects(m.block('k', 1, () => 1), (e) => e instanceof LockClosedError);
  assert.throws(() => m.make('k', 1), (e) => e instanceof LockClosedError);
  await assert.rejects(held.acquire(), (e) => e instanceof LockClosedError);
  assert.equal(held.isAcquired, false);
});

test('managers on one SQLite file exclude each other, with increasing tokens', async (t) => {
  const path = sqliteFile(t);
  const a = new LockManager(LockConfig({ driver: 'sqlite', sqlite: { path } }));
  const b = new LockManager(LockConfig({ driver: 'sqlite', sqlite: { path } }));
  t.after(() => Promise.all([a.close(), b.close()]));
  let inside = 0;
  let maxInside = 0;
  const tokens = [];
  const work = (m) =>
    m.block('shared', 10, async (held) => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      tokens.push(held.token);
      await new Promise((r) => setTimeout(r, 5));
      inside--;
    }, { timeout: 30, retryDelay: 5 });
  await Promise.all(Array.from({ length: 10 }, (_, i) => work(i % 2 ? a : b)));
  assert.equal(maxInside, 1);
  assert.deepEqual([...tokens].sort((x, y) => x - y), tokens, 'tokens increase in the order of the sections');
});

test('LockConfig fills defaults; configFromEnv reads process.env as Go does', () => {
  assert.deepEqual(LockConfig({ driver: 'sqlite' }), { driver: 'sqlite', prefix: 'zerotal_lock:', sqlite: { path: ':memory:' } });
  const env = { LOCK_DRIVER: 'sqlite', LOCK_SQLITE_PATH: '/tmp/x.db', LOCK_PREFIX: 'app:', REDIS_URL: 'redis://h:1/0', LOCK_URL: 'memory:', LOCK_FILE_DIR: '/tmp/d' };
  assert.deepEqual(lock.configFromEnv(env), {
    url: 'memory:',
    driver: 'sqlite',
    prefix: 'app:',
    sqlite: { path: '/tmp/x.db' },
    redis: { url: 'redis://h:1/0' },
    file: { dir: '/tmp/d' },
  });
});

test('the Lock facade runs on the default manager', async (t) => {
  const m = memory(t);
  Lock.setManager(m);
  t.after(() => Lock.setManager(null));
  assert.equal(Lock.manager(), m);
  assert.equal(await Lock.try('facade', 10, async () => 'try'), 'try');
  assert.equal(await Lock.block('facade', 10, async () => 'block', { timeout: 1, retryDelay: 50 }), 'block');
  const l = Lock.make('facade', 10);
  assert.equal(await l.acquire(), true);
  await l.release();
  assert.match(lock.version(), /\S/);
});
