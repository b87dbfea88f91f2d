// types.ts is compiled (never run) by types.test.js with tsc --noEmit: the
// declarations must describe the API as the documentation uses it, and
// reject what it does not accept.

import {
  Lock,
  LockManager,
  LockConfig,
  LockNotAcquiredError,
  LockLostError,
  LockError,
  ManagedLock,
  HeldLock,
  Code,
  configFromEnv,
  version,
  type Config,
} from '..';

async function documented(): Promise<void> {
  const n: number = await Lock.try('invoice:123', 10, async () => 123);
  const s: string = await Lock.block('report:export', 30, async () => 'done', { timeout: 60, retryDelay: 200 });
  await Lock.block('report:monthly', 60, async (lock: HeldLock, signal: AbortSignal) => {
    const token: number = lock.token;
    const owner: string = lock.owner;
    const expires: Date | null = lock.expiresAt;
    const still: boolean = await lock.refresh();
    return [token, owner, expires, still, signal.aborted];
  }, { refresh: true, refreshEvery: 20 });

  const lock: ManagedLock = Lock.make('payment:456', 15);
  if (await lock.acquire()) {
    await lock.release();
  }
  await lock.block(5, 100, { signal: AbortSignal.timeout(1000) });
  const held: boolean = lock.isAcquired;
  const key: string = lock.key;
  await lock.refresh();
  await lock.forceRelease();

  try {
    await Lock.try('invoice:123', 10, () => 1);
  } catch (err) {
    if (err instanceof LockNotAcquiredError) {
      const status: 409 = err.status;
      const k: string | undefined = err.key;
      const code: 1 = err.code;
      void [status, k, code];
    }
    if (err instanceof Lock.NotAcquired || err instanceof Lock.Lost || err instanceof LockLostError) {
      const e: LockError = err;
      void e.detail;
    }
  }

  const config: Config = LockConfig({ driver: 'sqlite', prefix: 'app:', sqlite: { path: 'locks.db' } });
  const m = new LockManager(config);
  await m.try('k', 1, () => undefined);
  await m.close();
  const fromEnv: Config = configFromEnv();
  void [n, s, held, key, fromEnv, version(), Code.NOT_ACQUIRED, new LockManager()];
}

function rejected(m: LockManager): void {
  // @ts-expect-error the TTL is a number of seconds
  m.try('k', '10', () => 1);
  // @ts-expect-error try has no timeout: it makes one attempt
  m.try('k', 10, () => 1, { timeout: 5 });
  // @ts-expect-error unknown config members too
  LockConfig({ drivr: 'memory' });
  // @ts-expect-error the key is a string
  m.make(7, 10);
}

void documented;
void rejected;
