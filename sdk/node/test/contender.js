'use strict';
// contender.js: the Node side of the cross-runtime test (TestCrossRuntime
// in sdk/cshared), as tests/contender.py is Python's.
//
//   node test/contender.js CONFIG_JSON KEY ROUNDS HOLD_MS LOG
//
// It opens a manager from CONFIG_JSON, prints "ready" and waits for a line
// on stdin, then takes KEY ROUNDS times with block, holding it HOLD_MS each
// time, and writes one line per critical section to LOG: "start_ns end_ns
// token node", times from the wall clock the other sides read too. After its
// first round it prints "first" and waits for another line, as
// contender.py does.

const fs = require('node:fs');
const readline = require('node:readline');
const { LockManager } = require('..');

// wallNs is the wall clock in nanoseconds, finer than Date.now's ms.
function wallNs() {
  return BigInt(Math.floor(performance.timeOrigin * 1e3)) * 1000n + BigInt(Math.floor(performance.now() * 1e6));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const [config, key, rounds, holdMs, logPath] = process.argv.slice(2);
  const m = new LockManager(JSON.parse(config));
  const lines = [];
  const stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  console.log('ready');
  await stdin.next();
  for (let i = 0; i < Number(rounds); i++) {
    await m.block(key, 10, async (lock, signal) => {
      const start = wallNs();
      await sleep(Number(holdMs));
      const end = wallNs();
      if (signal.aborted) throw new Error('lost the lock inside the critical section');
      lines.push(`${start} ${end} ${lock.token} node\n`);
    }, { timeout: 60, retryDelay: 2 });
    if (i === 0) {
      console.log('first');
      await stdin.next();
    }
    await sleep(Number(holdMs)); // give the other sides their turn between rounds
  }
  await m.close();
  fs.writeFileSync(logPath, lines.join(''));
  process.exit(0); // stdin stays open: the Go side closes it only after we exit
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
