'use strict';
// contender.js: the Node side of the cross-runtime test (TestCrossRuntime
// in sdk/cshared), as tests/contender.py is Python's.
//
//   node test/contender.js CONFIG_JSON KEY ROUNDS HOLD_MS LOG
//
// It opens a manager from CONFIG_JSON, prints "ready" and waits for a line
// on stdin, then takes KEY ROUNDS times with block, holding it HOLD_MS each
// time, and appends "enter node TOKEN" and "leave node TOKEN" to LOG as the
// first and last acts of each critical section, into the file every runtime
// appends to. After its first round it prints "first" and waits for another
// line, as contender.py does.

const fs = require('node:fs');
const readline = require('node:readline');
const { LockManager } = require('..');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const [config, key, rounds, holdMs, logPath] = process.argv.slice(2);
  const log = fs.openSync(logPath, 'a'); // O_APPEND: each line lands whole, in order
  const m = new LockManager(JSON.parse(config));
  const stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  console.log('ready');
  await stdin.next();
  for (let i = 0; i < Number(rounds); i++) {
    await m.block(key, 10, async (lock, signal) => {
      fs.writeSync(log, `enter node ${lock.token}\n`);
      await sleep(Number(holdMs));
      if (signal.aborted) throw new Error('lost the lock inside the critical section');
      fs.writeSync(log, `leave node ${lock.token}\n`);
    }, { timeout: 60, retryDelay: 2 });
    if (i === 0) {
      console.log('first');
      await stdin.next();
    }
    await sleep(Number(holdMs)); // give the other sides their turn between rounds
  }
  await m.close();
  fs.closeSync(log);
  process.exit(0); // stdin stays open: the Go side closes it only after we exit
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
