'use strict';
// A process that exits while it holds or waits for a lock does not hang,
// and gives back what it held on its way out (not after the TTL).

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { LockManager, LockConfig } = require('..');
const { node, sqliteFile } = require('./helpers.js');

const pkg = JSON.stringify(path.join(__dirname, '..'));

const scripts = {
  // The event loop empties while a ManagedLock still holds its key.
  'a lock left held': `
    const { LockManager } = require(${pkg});
    const m = new LockManager(JSON.parse(process.argv[1]));
    m.make('exit', 60).acquire().then((ok) => console.log('acquired', ok));`,
  // process.exit inside the callback.
  'process.exit under the lock': `
    const { LockManager } = require(${pkg});
    const m = new LockManager(JSON.parse(process.argv[1]));
    m.try('exit', 60, () => { console.log('acquired true'); process.exit(0); }, { refresh: true });`,
  // process.exit while a wait is pending, with the key held by the same process.
  'process.exit while waiting': `
    const { LockManager } = require(${pkg});
    const m = new LockManager(JSON.parse(process.argv[1]));
    m.make('exit', 60).acquire().then((ok) => {
      console.log('acquired', ok);
      m.block('exit', 60, () => {}, { timeout: 60 }).catch(() => {});
      setTimeout(() => process.exit(0), 100);
    });`,
};

for (const [name, script] of Object.entries(scripts)) {
  test(`the process exits promptly after ${name}, and its lock is free`, async (t) => {
    const config = LockConfig({ driver: 'sqlite', sqlite: { path: sqliteFile(t) } });
    const r = await node(['-e', script, JSON.stringify(config)], { timeout: 20000 });
    assert.equal(r.code, 0, `exit ${r.code} ${r.signal ?? ''}\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /acquired true/);
    assert.ok(r.ms < 10000, `the process took ${r.ms} ms to exit`);
    const m = new LockManager(config);
    t.after(() => m.close());
    assert.equal(await m.make('exit', 1).acquire(), true, 'the exiting process released its lock');
  });
}
