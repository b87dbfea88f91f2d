'use strict';
// Helpers shared by the test files: managers on private prefixes, temporary
// SQLite files, and a child-process runner.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { execFile } = require('node:child_process');
const { LockManager, LockConfig } = require('..');

// memory opens a manager on the memory driver under a prefix of its own
// (or prefix: the memory driver's table is shared by the process's managers).
function memory(t, prefix = `t-${crypto.randomUUID()}:`) {
  const m = new LockManager(LockConfig({ driver: 'memory', prefix }));
  t.after(() => m.close());
  return m;
}

// sqliteFile returns a fresh SQLite path, removed after the test.
function sqliteFile(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zerotal-node-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'locks.db');
}

// node runs a script in a child process and resolves with its exit code,
// output and how long it took.
function node(args, options = {}) {
  const start = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: 30000, ...options }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code ?? 1 : 0, signal: err?.signal, stdout, stderr, ms: Date.now() - start });
    });
  });
}

// until polls cond every 5 ms up to limitMs.
async function until(cond, limitMs = 5000) {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${limitMs} ms: ${cond}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

module.exports = { memory, sqliteFile, node, until };
