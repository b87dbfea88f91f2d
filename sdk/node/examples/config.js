// config.js: a manager of your own, here on a SQLite file that every process
// of the host can share.
//
//   node examples/config.js /tmp/locks.db
const { LockManager, LockConfig } = require('@zerotal/lock');

async function main() {
  const config = LockConfig({
    driver: 'sqlite', // or 'memory', 'redis' (REDIS_URL), 'file', ... ; or url: 'redis://host:6379/0'
    prefix: 'app:',
    sqlite: { path: process.argv[2] || 'locks.db' },
  });
  const locks = new LockManager(config);
  try {
    const token = await locks.try('nightly', 60, async (lock) => lock.token);
    console.log(`config: ran the nightly job on ${config.driver} with fencing token ${token}`);
  } finally {
    await locks.close();
  }
}

main();
