#!/usr/bin/env node
// `loopcheck` installed from npm: runs the binary of this platform's package (an optional
// dependency, so npm installs only the one that fits), with the same arguments, standard
// streams and exit status.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

const platformPackage = `@loopcheck/${process.platform}-${process.arch}`;

function binary() {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${platformPackage}/package.json`);
    return path.join(path.dirname(manifest), 'bin', process.platform === 'win32' ? 'loopcheck.exe' : 'loopcheck');
  } catch {
    console.error(
      `loopcheck: no binary for ${process.platform}-${process.arch}: ${platformPackage} is not installed. ` +
        'The npm package covers the platforms listed in its README; elsewhere, build loopcheck from source ' +
        '(cargo install) and set LOOPCHECK_BIN.',
    );
    process.exit(1);
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: 'inherit' });
// A signal sent to this launcher (a CI's cancel, say) reaches loopcheck, which stops
// its controllers cleanly; the launcher then ends as loopcheck ended.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (err) => {
  console.error(`loopcheck: cannot start ${child.spawnfile}: ${err.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
