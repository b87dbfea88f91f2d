'use strict';
// Waiting must not block Node's event loop, nor libuv's thread pool (4
// threads by default): a wait is the engine's goroutine, watched through a
// socket, never a blocked thread of ours.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { memory } = require('./helpers.js');

test('a 10 ms interval keeps ticking on time while Lock.block waits 1 s', async (t) => {
  const m = memory(t);
  const holder = m.make('busy', 30);
  await holder.acquire();
  const ticks = [];
  const timer = setInterval(() => ticks.push(performance.now()), 10);
  const started = performance.now();
  const err = await m.block('busy', 10, () => 'ran', { timeout: 1 }).catch((e) => e);
  const waited = performance.now() - started;
  clearInterval(timer);
  assert.equal(err.name, 'LockNotAcquiredError');
  assert.ok(waited >= 950, `waited ${waited} ms`);
  let worst = 0;
  for (let i = 1; i < ticks.length; i++) worst = Math.max(worst, ticks[i] - ticks[i - 1]);
  t.diagnostic(`${ticks.length} ticks in ${Math.round(waited)} ms, longest gap ${worst.toFixed(1)} ms`);
  assert.ok(ticks.length >= 50, `only ${ticks.length} ticks of 10 ms in ${waited} ms`);
  assert.ok(worst < 250, `the event loop stalled for ${worst} ms`); // a wait would block it for the whole 1 s
  await holder.release();
});

test('16 concurrent waits and 16 held, refreshed locks leave the thread pool free', async (t) => {
  const m = memory(t);
  const n = 16;
  const holders = [];
  for (let i = 0; i < n; i++) {
    const h = m.make(`held:${i}`, 30);
    assert.equal(await h.acquire(), true);
    holders.push(h);
  }
  // 16 waits, more than the pool's 4 threads, each on a held key.
  const waits = holders.map((h) => m.block(h.key, 10, (held) => held.token, { timeout: 30, retryDelay: 50 }));
  // 16 callbacks holding locks with refresh, until told to finish.
  let finish;
  const finished = new Promise((r) => (finish = r));
  let entered = 0;
  const holds = Array.from({ length: n }, (_, i) =>
    m.try(`refreshed:${i}`, 1, async (held, signal) => {
      entered++;
      await finished;
      return signal.aborted;
    }, { refresh: true }),
  );
  while (entered < n) await new Promise((r) => setTimeout(r, 5));

  // Work that needs the pool completes at once: fs, crypto, and a call of
  // ours (a refresh runs on the pool: one backend round trip).
  const start = performance.now();
  await fs.promises.readFile(__filename);
  await new Promise((resolve, reject) => crypto.pbkdf2('pw', 'salt', 1, 32, 'sha256', (e) => (e ? reject(e) : resolve())));
  assert.equal(await holders[0].refresh(), true);
  const took = performance.now() - start;
  t.diagnostic(`fs + crypto + a refresh took ${took.toFixed(1)} ms with ${n} waits and ${n} held locks`);
  assert.ok(took < 500, `thread-pool work took ${took} ms while locks waited`);

  // The refreshed locks outlive their 1 s TTL (a refresh may stall ~0.6 s),
  // and the waits get theirs.
  await new Promise((r) => setTimeout(r, 2200));
  finish();
  assert.deepEqual(await Promise.all(holds), Array(n).fill(false), 'no refreshed lock was lost');
  await Promise.all(holders.map((h) => h.release()));
  const tokens = await Promise.all(waits);
  assert.equal(tokens.length, n);
});
