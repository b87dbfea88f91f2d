// errors.js: contention, loss and cancellation.
//
//   node examples/errors.js
const { Lock, LockNotAcquiredError, LockLostError } = require('@zerotal/lock');

async function main() {
  // Contention is LockNotAcquiredError, with the key and HTTP status 409.
  const holder = Lock.make('invoice:123', 10);
  await holder.acquire();
  try {
    await Lock.try('invoice:123', 10, async () => {});
  } catch (err) {
    if (!(err instanceof LockNotAcquiredError)) throw err;
    console.log(`busy: ${err.key} answers ${err.status}`);
  }

  // A lost lock aborts the callback's signal, and the call rejects with
  // LockLostError: the work started but may not have run alone.
  try {
    await Lock.block('report:monthly', 60, async (lock, signal) => {
      await Lock.make('report:monthly', 60).forceRelease(); // someone takes it away
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      console.log(`lost: the signal aborted (${signal.reason.name})`);
    }, { refresh: true, refreshEvery: 0.5 });
  } catch (err) {
    if (!(err instanceof Lock.Lost)) throw err;
    console.log(`lost: ${err instanceof LockLostError ? 'LockLostError' : err.name}`);
  }

  // An AbortSignal cancels a wait.
  try {
    await Lock.block('invoice:123', 10, async () => {}, { timeout: 60, signal: AbortSignal.timeout(100) });
  } catch (err) {
    console.log(`cancelled: ${err.name}`);
  }
  await holder.release();
}

main();
