'use strict';
// native.js loads libzerotal_lock with koffi, once per process, and turns
// the codes its functions return into the generated error classes.

const fs = require('node:fs');
const path = require('node:path');
const koffi = require('koffi');
const abi = require('./abi_gen.js');

const LIBRARY = 'libzerotal_lock.so';

// candidates lists where the library may be: $ZEROTAL_LOCK_LIBRARY alone
// when it is set; else the prebuilt the package ships for this platform,
// then a checkout's build directory (make cshared).
function candidates() {
  const env = process.env.ZEROTAL_LOCK_LIBRARY;
  if (env) return [env];
  return [
    path.join(__dirname, '..', 'prebuilds', `${process.platform}-${process.arch}`, LIBRARY),
    path.join(__dirname, '..', '..', 'cshared', 'build', LIBRARY),
  ];
}

let fns = null;

// library returns the library's functions, loading it on first use. A Go
// runtime cannot be unloaded, and koffi never unloads it.
function library() {
  if (fns) return fns;
  const tried = [];
  for (const file of candidates()) {
    if (!fs.existsSync(file)) {
      tried.push(file);
      continue;
    }
    const f = abi.declare(koffi, koffi.load(file));
    const version = f.zl_abi_version();
    if (version !== abi.ABI_VERSION) {
      throw new Error(`${file} implements C ABI version ${version}; @zerotal/lock needs ${abi.ABI_VERSION}`);
    }
    fns = f;
    return f;
  }
  throw new Error(
    `libzerotal_lock not found for ${process.platform}-${process.arch} (tried ${tried.join(', ')}): ` +
      'the package ships a prebuilt library for linux-x64 only; elsewhere build it with `make cshared` ' +
      'and set ZEROTAL_LOCK_LIBRARY to its path',
  );
}

// The C ABI starts every detail with the function's name.
const C_FUNCTION = /^zl_[a-z_]+: /;

// lastError is this thread's detail. Only a call made on the main thread
// has one to read: a call koffi ran on a worker thread left its detail
// there.
function lastError() {
  return library().zl_last_error().replace(C_FUNCTION, '');
}

// errorOf is the error of a code, with the detail and the key it is about.
function errorOf(code, detail, key) {
  const Class = abi.ERRORS[code];
  const err = Class ? new Class(detail) : new abi.LockError(detail || `unknown error code ${code}`);
  if (!Class) err.code = code;
  if (key !== undefined) err.key = key;
  return err;
}

// check throws the error of a code a call on this thread just returned.
function check(code, key) {
  if (code !== abi.Code.OK) throw errorOf(code, lastError(), key);
}

// callAsync runs a function that may wait on the backend (a round trip,
// bounded by the engine's timeouts) on libuv's thread pool, and resolves
// with its code. The detail stays on the worker thread, so a failure
// carries the code's description.
function callAsync(name, ...args) {
  return new Promise((resolve, reject) => {
    library()[name].async(...args, (err, code) => (err ? reject(err) : resolve(code)));
  });
}

async function checkAsync(key, name, ...args) {
  const code = await callAsync(name, ...args);
  if (code !== abi.Code.OK) {
    throw errorOf(code, `${name}: ${library().zl_strerror(code)} (the detail stayed on the worker thread that ran the call)`, key);
  }
}

// readString reads a string with the size protocol of zl_key and zl_owner.
function readString(name, handle) {
  const f = library();
  const len = [0];
  check(f[name](handle, null, len));
  const buf = Buffer.alloc(len[0]);
  check(f[name](handle, buf, len));
  return buf.toString('utf8', 0, len[0] - 1);
}

// out calls a function with one out-parameter and returns its value.
function out(name, ...args) {
  const v = [0];
  check(library()[name](...args, v));
  return v[0];
}

module.exports = { abi, library, check, checkAsync, callAsync, errorOf, lastError, readString, out };
