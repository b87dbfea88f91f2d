'use strict';
// The examples docs/node.md shows (sdk/node/examples), run with no
// configuration in the environment.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { node, sqliteFile } = require('./helpers.js');

// env is the environment without the library's configuration variables.
function env() {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith('LOCK_') || k === 'REDIS_URL') delete e[k];
  return e;
}

async function example(name, ...args) {
  const r = await node([path.join(__dirname, '..', 'examples', name), ...args], { env: env() });
  assert.equal(r.code, 0, `${name} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('quickstart.js', async () => {
  const out = await example('quickstart.js');
  assert.match(out, /^try: processing invoice 123 with fencing token [1-9]\d*$/m);
  assert.match(out, /^block: exported report\.csv$/m);
  assert.match(out, /^make: paying with owner [0-9a-f]{32}$/m);
});

test('errors.js', async () => {
  const out = await example('errors.js');
  assert.match(out, /^busy: invoice:123 answers 409$/m);
  assert.match(out, /^lost: the signal aborted \(LockLostError\)$/m);
  assert.match(out, /^lost: LockLostError$/m);
  assert.match(out, /^cancelled: TimeoutError$/m);
});

test('config.js', async (t) => {
  const out = await example('config.js', sqliteFile(t));
  assert.match(out, /^config: ran the nightly job on sqlite with fencing token [1-9]\d*$/m);
});
