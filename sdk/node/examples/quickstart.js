// quickstart.js: the three call styles of the Lock facade. With no
// environment variable set, the default manager uses the in-process memory
// driver; set LOCK_URL (or LOCK_DRIVER and friends) to share locks between
// processes and hosts.
//
//   node examples/quickstart.js
const { Lock } = require('@zerotal/lock');

async function main() {
  // Lock.try: acquire once, run the callback, always release.
  await Lock.try('invoice:123', 10, async (lock) => {
    console.log(`try: processing invoice 123 with fencing token ${lock.token}`);
  });

  // Lock.block: wait up to 5 s for the key, poll every 200 ms at most.
  const report = await Lock.block('report:export', 30, async () => 'report.csv', { timeout: 5, retryDelay: 200 });
  console.log(`block: exported ${report}`);

  // Lock.make: a handle you acquire and release yourself.
  const lock = Lock.make('payment:456', 15);
  if (await lock.acquire()) {
    try {
      console.log(`make: paying with owner ${lock.owner}`);
    } finally {
      await lock.release();
    }
  }
}

main();
