// The public API of @zerotal/lock. The error classes, the Code table and the
// configuration's types are generated from the spec (abi_gen.d.ts); this file
// declares the hand-written layer over them.

import {
  Code,
  Config,
  LockError,
  LockNotAcquiredError,
  LockLostError,
  LockInvalidArgumentError,
  LockClosedError,
  LockInvalidHandleError,
  LockDriverError,
  LockCanceledError,
  LockDeadlineExceededError,
  LockCallbackError,
  LockInternalError,
} from './abi_gen';

export {
  Code,
  Config,
  LockError,
  LockNotAcquiredError,
  LockLostError,
  LockInvalidArgumentError,
  LockClosedError,
  LockInvalidHandleError,
  LockDriverError,
  LockCanceledError,
  LockDeadlineExceededError,
  LockCallbackError,
  LockInternalError,
};
export type { CodeName, SQLiteConfig, RedisConfig, FileConfig } from './abi_gen';

/** What every lock tells without asking the backend. */
export interface LockState {
  /** The lock's key, without the manager's prefix. */
  readonly key: string;
  /** The owner token of the current or last acquisition: 32 hex digits, or "". */
  readonly owner: string;
  /** The fencing token of the current acquisition (it only increases per key), or 0. */
  readonly token: number;
  /** The client-side estimate of the expiry, from the last acquire or refresh; null when not held. */
  readonly expiresAt: Date | null;
  /** Whether the lock is held, as far as this client can tell. */
  readonly isAcquired: boolean;
}

/** The lock a try or block callback runs under. */
export declare class HeldLock implements LockState {
  private constructor();
  readonly key: string;
  readonly owner: string;
  readonly token: number;
  readonly expiresAt: Date | null;
  readonly isAcquired: boolean;
  /** Extends the lock by its TTL if still held; resolves with whether it was. */
  refresh(): Promise<boolean>;
}

/** A handle on one key for explicit acquire and release, made by make(). */
export declare class ManagedLock implements LockState {
  private constructor();
  readonly key: string;
  readonly owner: string;
  readonly token: number;
  readonly expiresAt: Date | null;
  readonly isAcquired: boolean;
  /** Tries once to take the lock: true if taken. If already held, resets its TTL. */
  acquire(): Promise<boolean>;
  /**
   * Waits up to timeoutSeconds (default: the TTL) for the lock, polling every
   * retryDelayMs (default 100) where the driver cannot say when it is freed.
   * Rejects with LockNotAcquiredError when the time runs out, and with
   * options.signal's reason when it aborts first.
   */
  block(timeoutSeconds?: number, retryDelayMs?: number, options?: { signal?: AbortSignal }): Promise<void>;
  /** Releases the lock if this handle holds it; a no-op otherwise, also after it expired. */
  release(): Promise<void>;
  /** Extends the lock by its TTL if still held: false when it is gone, and isAcquired turns false. */
  refresh(): Promise<boolean>;
  /** Frees the key whoever holds it: for administration and recovery. */
  forceRelease(): Promise<void>;
}

/** The function try and block run under the lock. */
export type LockCallback<T> = (lock: HeldLock, signal: AbortSignal) => Promise<T> | T;

/** Options of try. */
export interface TryOptions {
  /** Extend the lock in the background while the callback runs (default false). */
  refresh?: boolean;
  /** Seconds between refreshes (default: a third of the TTL); setting it turns refresh on. */
  refreshEvery?: number;
  /** Aborts the wait; while the callback runs, it aborts the callback's signal. */
  signal?: AbortSignal;
}

/** Options of block. */
export interface BlockOptions extends TryOptions {
  /** The longest wait for the key, in seconds (default: the TTL; 0: a single attempt). */
  timeout?: number;
  /** Milliseconds between attempts when the driver cannot say the key is free (default 100). */
  retryDelay?: number;
}

/** Takes locks on one backend under one key prefix. */
export declare class LockManager {
  /** Opens a manager on config (see LockConfig), or on the environment's (configFromEnv) when omitted. */
  constructor(config?: Config);
  /** Whether close has been called. */
  readonly closed: boolean;
  /**
   * Acquires key once and runs fn under it, then releases it, whatever fn
   * does. Rejects with LockNotAcquiredError (status 409) without running fn
   * when the key is held, and with LockLostError when the lock was not held
   * from start to finish (fn's own error is then its cause).
   */
  try<T>(key: string, ttlSeconds: number, fn: LockCallback<T>, options?: TryOptions): Promise<T>;
  /** Waits for key up to options.timeout seconds (default: the TTL), then runs fn under it as try does. */
  block<T>(key: string, ttlSeconds: number, fn: LockCallback<T>, options?: BlockOptions): Promise<T>;
  /** Returns a handle on key with the given TTL, not acquired. */
  make(key: string, ttlSeconds: number): ManagedLock;
  /**
   * Closes the manager: running callbacks see their signal abort, waits
   * end, what it holds is released and the backend closed. Idempotent;
   * afterwards every call rejects with LockClosedError.
   */
  close(): Promise<void>;
}

/** The facade: try, block and make on the default manager, opened from the environment on first use. */
export declare const Lock: {
  try<T>(key: string, ttlSeconds: number, fn: LockCallback<T>, options?: TryOptions): Promise<T>;
  block<T>(key: string, ttlSeconds: number, fn: LockCallback<T>, options?: BlockOptions): Promise<T>;
  make(key: string, ttlSeconds: number): ManagedLock;
  /** The default manager, opened from the environment (configFromEnv) on first use. */
  manager(): LockManager;
  /** Makes m the default manager; null opens a new one from the environment on next use. */
  setManager(m: LockManager | null): void;
  readonly NotAcquired: typeof LockNotAcquiredError;
  readonly Lost: typeof LockLostError;
};

/** Returns config with every missing member set to its default (redis.url from REDIS_URL). */
export declare function LockConfig(config?: Config): Config;

/** The configuration the environment describes, as Go's ConfigFromEnv reads it, from process.env. */
export declare function configFromEnv(env?: NodeJS.ProcessEnv): Config;

/** The library's version. */
export declare function version(): string;
