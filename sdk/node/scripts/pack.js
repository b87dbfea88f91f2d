'use strict';
// pack.js writes the npm tarball of @zerotal/lock with a prebuilt library
// inside, for the platform it runs on:
//
//   node scripts/pack.js --library PATH/libzerotal_lock.so --out DIR
//
// It stages the package's files (package.json's "files") with the library
// at prebuilds/<platform>-<arch>/, checks that package.json's version is the
// repository's VERSION, and runs npm pack there: the source tree is not
// touched. make npm-pack and the install test in sdk/cshared run it.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || !process.argv[i + 1]) {
    console.error('usage: node scripts/pack.js --library PATH --out DIR');
    process.exit(2);
  }
  return path.resolve(process.argv[i + 1]);
}

const root = path.join(__dirname, '..');
const library = arg('--library');
const outDir = arg('--out');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const version = fs.readFileSync(path.join(root, '..', '..', 'VERSION'), 'utf8').trim().replace(/^v/, '');
if (pkg.version !== version) {
  console.error(`package.json's version ${pkg.version} is not the repository's VERSION ${version}: update sdk/node/package.json`);
  process.exit(1);
}

const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'zerotal-pack-'));
try {
  fs.copyFileSync(path.join(root, 'package.json'), path.join(stage, 'package.json'));
  for (const entry of pkg.files) {
    const src = path.join(root, entry);
    if (entry.startsWith('prebuilds') || !fs.existsSync(src)) continue;
    fs.cpSync(src, path.join(stage, entry), { recursive: true });
  }
  const prebuilt = path.join(stage, 'prebuilds', `${process.platform}-${process.arch}`);
  fs.mkdirSync(prebuilt, { recursive: true });
  fs.copyFileSync(library, path.join(prebuilt, 'libzerotal_lock.so'));
  fs.mkdirSync(outDir, { recursive: true });
  const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', outDir], { cwd: stage, encoding: 'utf8' });
  const tarball = path.join(outDir, out.trim().split('\n').pop());
  console.log(tarball);
} finally {
  fs.rmSync(stage, { recursive: true, force: true });
}
