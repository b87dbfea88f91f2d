'use strict';
// @zerotal/lock: distributed locks for Node.js over zerotal lock's engine.
// The Lock facade runs on a default LockManager configured from the
// environment; LockManager opens one on a configuration of your own.

const { abi, library } = require('./native.js');
const { LockManager, ManagedLock, HeldLock } = require('./manager.js');

/**
 * LockConfig returns the configuration with every missing member set to its
 * default, for new LockManager(LockConfig({...})). A member whose default is
 * an environment variable's value (redis.url: REDIS_URL) takes it from
 * process.env now.
 */
function LockConfig(config = {}) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError('LockConfig takes an object, such as { driver: "sqlite", sqlite: { path: "locks.db" } }');
  }
  const out = structuredClone(config);
  for (const m of abi.CONFIG_MEMBERS) {
    const value = m.defaultEnv ? process.env[m.defaultEnv] || '' : m.default;
    if (value !== '' && get(out, m.member) === undefined) set(out, m.member, value);
  }
  return out;
}

/**
 * configFromEnv is the configuration the environment describes (LOCK_URL,
 * LOCK_DRIVER, LOCK_PREFIX, LOCK_SQLITE_PATH, REDIS_URL, LOCK_FILE_DIR), as
 * Go's ConfigFromEnv reads it, with defaults for what is unset. It reads
 * process.env, so variables set by the program itself count.
 */
function configFromEnv(env = process.env) {
  const config = {};
  for (const m of abi.CONFIG_MEMBERS) {
    if (env[m.env]) set(config, m.member, env[m.env]);
  }
  return LockConfig(config);
}

function get(obj, member) {
  return member.split('.').reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
}

function set(obj, member, value) {
  const keys = member.split('.');
  const last = keys.pop();
  for (const k of keys) {
    if (obj[k] === undefined) obj[k] = {};
    obj = obj[k];
  }
  obj[last] = value;
}

let defaultManager = null;

/**
 * Lock is the facade: try, block and make on the default manager, opened on
 * first use from the environment (configFromEnv).
 */
const Lock = {
  /** Acquires key once and runs fn(lock, signal) under it; LockNotAcquiredError if held. */
  try(key, ttlSeconds, fn, options) {
    return Lock.manager().try(key, ttlSeconds, fn, options);
  },
  /** Waits for key up to options.timeout seconds (default: the TTL), then runs fn under it. */
  block(key, ttlSeconds, fn, options) {
    return Lock.manager().block(key, ttlSeconds, fn, options);
  },
  /** Returns a ManagedLock on key, not acquired. */
  make(key, ttlSeconds) {
    return Lock.manager().make(key, ttlSeconds);
  },
  /** The default manager, opened from the environment on first use. */
  manager() {
    if (!defaultManager || defaultManager.closed) defaultManager = new LockManager(configFromEnv());
    return defaultManager;
  },
  /** Makes m the default manager; null opens a new one from the environment on next use. The previous one is not closed. */
  setManager(m) {
    if (m !== null && !(m instanceof LockManager)) throw new TypeError('setManager takes a LockManager or null');
    defaultManager = m;
  },
  NotAcquired: abi.LockNotAcquiredError,
  Lost: abi.LockLostError,
};

/** The library's version. */
function version() {
  return library().zl_version();
}

module.exports = {
  Lock,
  LockManager,
  ManagedLock,
  HeldLock,
  LockConfig,
  configFromEnv,
  version,
  Code: abi.Code,
  LockError: abi.LockError,
  LockNotAcquiredError: abi.LockNotAcquiredError,
  LockLostError: abi.LockLostError,
  LockInvalidArgumentError: abi.LockInvalidArgumentError,
  LockClosedError: abi.LockClosedError,
  LockInvalidHandleError: abi.LockInvalidHandleError,
  LockDriverError: abi.LockDriverError,
  LockCanceledError: abi.LockCanceledError,
  LockDeadlineExceededError: abi.LockDeadlineExceededError,
  LockCallbackError: abi.LockCallbackError,
  LockInternalError: abi.LockInternalError,
};
