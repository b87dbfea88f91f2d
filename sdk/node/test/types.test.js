'use strict';
// The .d.ts files (generated and hand-written) type-check the documented
// uses and reject misuse: tsc --noEmit on types.ts.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { node } = require('./helpers.js');

test('tsc --noEmit accepts the documented API and rejects misuse', async () => {
  const tsc = path.join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  const r = await node([tsc, '--noEmit', '-p', path.join(__dirname, 'tsconfig.json')], { timeout: 120000 });
  assert.equal(r.code, 0, `tsc failed:\n${r.stdout}\n${r.stderr}`);
});
