// loopcheck for vitest: runs the catalogue's cases against a tool loop that lives inside
// your application, through one `loopcheck serve` for the whole test run (docs/serve.md).
// The `loopcheck` npm package ships it as `loopcheck/vitest`; in a loopcheck checkout it
// is `loopcheck-node-controller/vitest`.
//
// In vitest.config.mjs, name this module as a global setup, so the main process starts the
// server once and stops it when the run ends:
//
//   export default defineConfig({ test: { globalSetup: ['loopcheck/vitest'] } });
//
// In a test file:
//
//   import { test } from 'vitest';
//   import { loopcheckCases, loopcheckSession } from 'loopcheck/vitest';
//
//   const runs = await loopcheckCases({ filter: ['dispatch/*'], supports: ['previous_response_id'] });
//   test.for(runs)('%s', async (run, ctx) => {
//     const session = await loopcheckSession(run, ctx);
//     await session.expectConforms(myLoop(session));
//   });

import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { AssertionError } from 'node:assert';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, beforeEach, inject, onTestFinished } from 'vitest';

/** The capabilities a loop has unless it says otherwise (docs/contract.md, section 8). */
export const DEFAULT_SUPPORTS = ['previous_response_id', 'stateless'];

/** The key under which the global setup provides the server's URL to the workers. */
const URL_KEY = 'loopcheckUrl';

// ---------------------------------------------------------------------------------------
// The global setup: runs in vitest's main process, once per run.

/** The npm package that carries the binary for this platform (npm/README.md). */
export function platformPackage(platform = process.platform, arch = process.arch) {
  return `@loopcheck/${platform}-${arch}`;
}

/**
 * The binary of the `loopcheck` npm package's platform package, when it is installed
 * beside this module (an optional dependency npm installs on the platforms it fits);
 * otherwise null.
 */
export function packagedLoopcheck() {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${platformPackage()}/package.json`);
    const bin = path.join(path.dirname(manifest), 'bin', process.platform === 'win32' ? 'loopcheck.exe' : 'loopcheck');
    accessSync(bin, constants.X_OK);
    return bin;
  } catch {
    return null;
  }
}

/**
 * Where `loopcheck` is: the one the `loopcheck` npm package installed, else
 * `LOOPCHECK_BIN`, else the first `loopcheck` on the `PATH`.
 */
export function findLoopcheck(env = process.env, packaged = packagedLoopcheck()) {
  if (packaged) return packaged;
  if (env.LOOPCHECK_BIN) return env.LOOPCHECK_BIN;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'loopcheck');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(
    'loopcheck: no loopcheck binary found: npm install loopcheck, set LOOPCHECK_BIN to its path, or put `loopcheck` on the PATH',
  );
}

/** Starts `loopcheck serve` and resolves with `{ url, stop }` once it prints its URL. */
export function startServer({ bin = findLoopcheck(), args = [], timeoutMs = 30_000 } = {}) {
  // The server stops when its stdin closes, so it ends with this process however that
  // process ends (SIGKILL included).
  const child = spawn(bin, ['serve', '--stop-on-eof', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  // Whatever ends the test run, the server goes with it.
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);

  const stop = () =>
    new Promise((resolve) => {
      process.off('exit', killNow);
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const force = setTimeout(killNow, 2_000);
      child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      child.kill('SIGTERM');
    });

  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const fail = (why) => {
      clearTimeout(timer);
      killNow();
      process.off('exit', killNow);
      reject(new Error(`loopcheck: \`${bin} serve\` ${why}${stderr.trim() ? `:\n${stderr.trim()}` : ''}`));
    };
    const timer = setTimeout(() => fail(`printed no URL within ${timeoutMs} ms`), timeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      // Keep the start of it for the error; the server says little once it runs.
      if (stderr.length < 64 * 1024) stderr += chunk;
    });
    const onEarlyExit = (code, signal) => fail(`exited (${signal ?? `code ${code}`}) before it listened`);
    child.stdout.setEncoding('utf8');
    const onStdout = (chunk) => {
      stdout += chunk;
      const match = /^loopcheck serve: listening on (http:\/\/\S+)/m.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      child.stdout.off('data', onStdout);
      child.stdout.resume(); // keep draining, so the server never blocks on a full pipe
      resolve({ url: match[1], stop });
    };
    child.stdout.on('data', onStdout);
    child.once('error', (err) =>
      fail(
        err.code === 'ENOENT'
          ? 'could not start: no such file (set LOOPCHECK_BIN to the loopcheck binary, or put `loopcheck` on the PATH)'
          : `could not start: ${err.message}`,
      ),
    );
    child.once('exit', onEarlyExit);
  });
}

/**
 * `loopcheck serve`'s snapshot flags: `snapshots` (a folder, relative to the working
 * directory; default `LOOPCHECK_SNAPSHOTS`) holds what each test's loop sent, and
 * `updateSnapshots` (default `LOOPCHECK_UPDATE_SNAPSHOTS` set to anything but empty,
 * `false` or `0`) accepts every change. The server reads the `[snapshots] redactions` of
 * the loopcheck.toml in the working directory, as `loopcheck run` does.
 */
export function snapshotArgs({ snapshots = process.env.LOOPCHECK_SNAPSHOTS, updateSnapshots } = {}, env = process.env) {
  const update = updateSnapshots ?? !['', 'false', '0', undefined].includes(env.LOOPCHECK_UPDATE_SNAPSHOTS);
  if (!snapshots) {
    if (update) throw new Error('loopcheck: updating snapshots needs a folder: set LOOPCHECK_SNAPSHOTS (or the `snapshots` option)');
    return [];
  }
  return ['--snapshots', path.resolve(snapshots), ...(update ? ['--update-snapshots'] : [])];
}

/**
 * A global setup with options (`snapshots`, `updateSnapshots`), for a setup file of your
 * own: `export const setup = loopcheckSetup({ snapshots: 'snapshots/my-loop' });`.
 */
export function loopcheckSetup(options = {}) {
  return async (project) => {
    const running = process.env.LOOPCHECK_URL;
    if (running) {
      project.provide(URL_KEY, running.replace(/\/+$/, ''));
      return undefined;
    }
    const server = await startServer({ args: snapshotArgs(options) });
    project.provide(URL_KEY, server.url);
    return server.stop;
  };
}

/**
 * vitest's global setup: one server for every worker of the run, its URL provided to
 * them as `loopcheckUrl`. With `LOOPCHECK_URL` set, uses that running server instead.
 * Snapshots as `LOOPCHECK_SNAPSHOTS` and `LOOPCHECK_UPDATE_SNAPSHOTS` say.
 */
export const setup = loopcheckSetup();

// ---------------------------------------------------------------------------------------
// In the tests.

/** The server's URL, as the global setup provided it. */
export function loopcheckUrl() {
  let url;
  try {
    url = inject(URL_KEY);
  } catch {
    // not inside a vitest worker
  }
  url ??= process.env.LOOPCHECK_URL;
  if (!url) {
    throw new Error(
      "loopcheck: no server: add `globalSetup: ['loopcheck-node-controller/vitest']` to the " +
        'test options of your vitest config (or set LOOPCHECK_URL to a running `loopcheck serve`)',
    );
  }
  return url.replace(/\/+$/, '');
}

/** A case id glob as `loopcheck --filter` reads it: `*` (any run of characters, `/`
 * included), `?`, `[...]`, `{a,b}`. */
export function globToRegExp(glob) {
  let source = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) {
        source += '\\[';
        continue;
      }
      let body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      source += `[${body}]`;
      i = end;
    } else if (c === '{') {
      braces++;
      source += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      source += ')';
    } else if (c === ',' && braces > 0) source += '|';
    else source += c.replace(/[.+^$()|\\\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/** Sends JSON; a session's control routes need its `token`. */
async function request(method, url, body, token) {
  const headers = body === undefined ? {} : { 'Content-Type': 'application/json' };
  if (token !== undefined) headers.Authorization = `Bearer ${token}`;
  let answer;
  try {
    answer = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error(`loopcheck: ${method} ${url}: ${err.cause?.message ?? err.message}`);
  }
  const text = await answer.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // an answer that is not JSON is reported as text below
  }
  return { status: answer.status, json, text };
}

function serverError(what, answer) {
  const message = answer.json?.error?.message ?? answer.text;
  return new Error(`loopcheck: ${what}: HTTP ${answer.status}: ${message}`);
}

/** One case in one state mode and one delivery. Its string is its name, so a `'%s'` test title shows it
 * whole (a `$name` title is quoted and cut short). */
class CaseRun {
  constructor(fields) {
    Object.assign(this, fields);
  }

  toString() {
    return this.name;
  }
}

/**
 * The catalogue's case runs (one per case, state mode and delivery), for `test.for`.
 *
 * `filter`: case id globs (all cases when empty). `supports`: the loop's capabilities;
 * runs needing others are kept but marked `supported: false`, and `loopcheckSession`
 * skips them, so they show as skipped rather than vanish. A loop that does not stream
 * gets no streamed run of a case that also runs with JSON responses, and a loop that does
 * not declare `replay` no replay run, nor one that does not declare `websocket` a run over
 * the socket.
 */
export async function loopcheckCases({ filter = [], supports = DEFAULT_SUPPORTS } = {}) {
  const globs = (Array.isArray(filter) ? filter : [filter]).map(globToRegExp);
  const capabilities = new Set(supports);
  const answer = await request('GET', `${loopcheckUrl()}/loopcheck/cases`);
  if (answer.status !== 200) throw serverError('listing the cases', answer);
  const runs = [];
  for (const entry of answer.json.cases) {
    if (globs.length > 0 && !globs.some((glob) => glob.test(entry.id))) continue;
    const deliveries = new Set(entry.runs.map((run) => run.delivery ?? 'json'));
    for (const { state, delivery = 'json', requires } of entry.runs) {
      if (delivery === 'stream' && deliveries.has('json') && !capabilities.has('stream')) continue;
      if (state === 'replay' && !capabilities.has('replay')) continue;
      if (delivery === 'websocket' && !capabilities.has('websocket')) continue;
      const missing = requires.filter((capability) => !capabilities.has(capability));
      runs.push(
        new CaseRun({
          name: `${entry.id} [${state}${delivery === 'json' ? '' : `, ${delivery}`}]`,
          case: entry.id,
          state,
          delivery,
          requires,
          supported: missing.length === 0,
          missing,
          level: entry.level,
          area: entry.area,
          summary: entry.summary,
        }),
      );
    }
  }
  if (runs.length === 0) {
    throw new Error(`loopcheck: no case matches ${JSON.stringify(filter)}`);
  }
  return runs;
}

/** A verdict that does not fail a run: `pass`, or `non-strict` (only SHOULD checks
 * missed) unless `strict`. */
function conforms(verdict, strict) {
  return verdict.verdict === 'pass' || (!strict && verdict.verdict === 'non-strict');
}

function oneLine(error) {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s*\n\s*/g, ' ');
}

/** What a failing verdict says: one line per failing check, then its detail; with
 * `loopError`, what the loop threw first. */
export function describeVerdict(verdict, options = {}) {
  const { strict = false } = options;
  const failing = new Set(strict ? ['fail', 'non-strict'] : ['fail']);
  const streamed = verdict.delivery && verdict.delivery !== 'json' ? `, ${verdict.delivery}` : '';
  const lines = [`loopcheck: ${verdict.id} [${verdict.state}${streamed}]: ${verdict.verdict}`];
  // One line for the loop's error: its stack goes on the assertion's `cause`.
  if ('loopError' in options) lines.push(`  the loop threw: ${oneLine(options.loopError)}`);
  const messages = new Set();
  for (const check of verdict.checks ?? []) {
    if (!failing.has(check.verdict)) continue;
    const message = check.message ?? check.verdict;
    messages.add(message);
    lines.push(`  ${check.id}: ${message}`);
  }
  if (verdict.detail && !messages.has(verdict.detail)) lines.push(`  detail: ${verdict.detail}`);
  if (verdict.verdict === 'drift' && verdict.snapshot_message) {
    lines.push(...verdict.snapshot_message.split('\n').map((line) => `  ${line}`));
    if (verdict.snapshot_message.includes('pending as')) {
      lines.push('  (or accept every change: rerun with LOOPCHECK_UPDATE_SNAPSHOTS=1)');
    }
  }
  return lines.join('\n');
}

/** A test's snapshot name: its file less the extension, then its suites and name joined
 * by dots, file-safe (`tests/loop.test/correlation-01-single-call-previous_response_id`). */
export function snapshotName(task, cwd = process.cwd()) {
  const file = cassettePath(task, { folder: '.', cwd });
  return path.relative(cwd, file).replace(/\.yaml$/, '').split(path.sep).join('/');
}

/**
 * Opens a session for one run: the case's fake Responses API and tool backend, for the
 * loop under test. Pass the test's context (`test.for`'s second argument) so that an
 * unsupported run is skipped; the session is deleted when the test ends.
 */
export async function loopcheckSession(run, ctx) {
  if (!run.supported) {
    const note = `the loop does not support: ${run.missing.join(', ')}`;
    if (ctx?.skip) ctx.skip(note);
    throw new Error(
      `loopcheck: ${run.name}: ${note}; pass the test context (test.for gives it) to skip it, or leave out runs whose \`supported\` is false`,
    );
  }
  const answer = await request('POST', `${loopcheckUrl()}/loopcheck/sessions`, {
    case: run.case,
    state: run.state,
    delivery: run.delivery,
    // Its snapshot (when the server keeps them) is the test's own: two tests may run
    // the same case run with different loops.
    ...(ctx?.task ? { snapshot: snapshotName(ctx.task) } : {}),
  });
  if (answer.status !== 201) throw serverError(`creating a session for ${run.name}`, answer);
  const created = answer.json;

  let cachedVerdict = null;
  let closed = false;
  const session = {
    run,
    id: created.id,
    case: created.case,
    state: created.state,
    delivery: created.delivery,
    requires: created.requires,
    baseUrl: created.base_url,
    toolsUrl: created.tools_url,
    apiKey: created.api_key,
    task: created.task,
    env: created.env,
    url: created.url,
    // What `url`, `resultUrl` and `verdictUrl` need, as `Authorization: Bearer ${token}`.
    token: created.token,
    resultUrl: created.result_url,
    verdictUrl: created.verdict_url,

    /** Posts the loop's result object (unless it is `undefined`: then the run is judged
     * as ended without one) and returns the oracle's verdict. */
    async verdict(result) {
      if (cachedVerdict) return cachedVerdict;
      if (result !== undefined) {
        const posted = await request('POST', created.result_url, result, created.token);
        // 422: not a result object; the verdict says what was wrong with it.
        if (posted.status !== 200 && posted.status !== 422) {
          throw serverError(`posting the result of ${run.name}`, posted);
        }
      }
      const judged = await request('GET', created.verdict_url, undefined, created.token);
      if (judged.status !== 200) throw serverError(`the verdict of ${run.name}`, judged);
      cachedVerdict = judged.json;
      return cachedVerdict;
    },

    /**
     * Asserts that the loop conforms: `outcome` is its result object, a promise of it, or
     * a function returning either. When the loop throws, the verdict is taken without a
     * result and the error names both. Returns the verdict.
     */
    async expectConforms(outcome, { strict = false } = {}) {
      let result;
      let loopError;
      let threw = false;
      try {
        result = await (typeof outcome === 'function' ? outcome() : outcome);
      } catch (err) {
        threw = true;
        loopError = err;
      }
      const judged = await session.verdict(threw ? undefined : result);
      if (!threw && conforms(judged, strict)) return judged;
      const error = new AssertionError({
        message: describeVerdict(judged, threw ? { strict, loopError } : { strict }),
      });
      Object.defineProperty(error, 'verdict', { value: judged, enumerable: false });
      if (threw) error.cause = loopError;
      // The stack starts at the test's own line, which the failure then points at.
      Error.captureStackTrace(error, session.expectConforms);
      throw error;
    },

    /** Ends the session; the test's end does it too. */
    async close() {
      if (closed) return;
      closed = true;
      const deleted = await request('DELETE', created.url, undefined, created.token);
      // 410: the server already dropped it (deleted, or expired).
      if (deleted.status !== 200 && deleted.status !== 204 && deleted.status !== 410) {
        throw serverError(`deleting the session of ${run.name}`, deleted);
      }
    },
  };
  session.assertConforms = session.expectConforms;
  (ctx?.onTestFinished ?? onTestFinished)(() => session.close());
  return session;
}

// ---------------------------------------------------------------------------------------
// A cassette per test: each test records its model traffic into a file of its own through
// `loopcheck record --listen` on the first run, and replays it on the next ones, matched
// by request (not by order), so tests may run in any order, files in parallel.
//
//   import { test } from 'vitest';
//   import { withCassette } from 'loopcheck/vitest';
//
//   test('refunds an order', (ctx) => withCassette(ctx, async ({ baseUrl }) => {
//     const client = new OpenAI();   // OPENAI_BASE_URL points at the cassette
//     ...
//   }));
//
// or `const cassette = useCassette();` at the top of a file, whose `beforeEach` and
// `afterEach` give every test of the file its cassette (`cassette.baseUrl`).
//
// The file is `cassettes/<test file>/<suite>.<test name>.yaml` under the working
// directory (`LOOPCHECK_CASSETTES` names another folder; `{ path }` another file). The
// record mode is `LOOPCHECK_RECORD_MODE`: `once` by default (record when the file is
// missing, replay it when present), `none` when CI is set, `new` or `all`. Recordings go
// to `LOOPCHECK_UPSTREAM`, else `OPENAI_BASE_URL` as the module was loaded, else the
// OpenAI API.

/** Where recordings go, read before any test points OPENAI_BASE_URL at a cassette. */
const UPSTREAM_AT_LOAD =
  process.env.LOOPCHECK_UPSTREAM || process.env.OPENAI_BASE_URL || 'https://api.openai.com/v1';

/** A key for the SDK's client when replaying without one: the cassette takes its own. */
const REPLAY_KEY = 'sk-loopcheck-replay';

/** `CI` set to anything but empty, `false` or `0`, as loopcheck reads it. */
function isCi(env = process.env) {
  return !['', 'false', '0', undefined].includes(env.CI);
}

/** The record mode: `LOOPCHECK_RECORD_MODE`, else `none` under CI, else `once`. */
export function recordMode(env = process.env) {
  const mode = env.LOOPCHECK_RECORD_MODE || (isCi(env) ? 'none' : 'once');
  if (!['once', 'new', 'all', 'none'].includes(mode)) {
    throw new Error(`loopcheck: LOOPCHECK_RECORD_MODE=${mode}: expected once, new, all or none`);
  }
  return mode;
}

/** A file name's worth of `text`: letters, digits, `.`, `_` and `-`. */
export function safeName(text) {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'test';
}

/** The cassette of a test, from its context: `cassettes/<file less its extension>/<suites
 * and name, joined by dots>.yaml`. */
export function cassettePath(task, { folder = process.env.LOOPCHECK_CASSETTES || 'cassettes', cwd = process.cwd() } = {}) {
  const names = [];
  for (let t = task; t && t.type !== undefined && t !== t.file; t = t.suite) {
    if (t.name) names.unshift(t.name);
  }
  const file = task.file?.filepath ?? task.file?.name ?? 'tests';
  const relative = path.relative(cwd, path.resolve(cwd, file)).replace(/\.[^./\\]+$/, '');
  const parts = relative.split(/[\\/]/).filter((p) => p && p !== '..').map(safeName);
  return path.join(cwd, folder, ...parts, `${safeName(names.join('.'))}.yaml`);
}

/**
 * Starts `loopcheck record --listen` on `path`; resolves with `{ baseUrl, replaying, path,
 * stop }` once it listens. `stop()` closes its stdin and resolves with its outcome
 * (`recorded`, `replayed`, `drift`, `missing`, `path`).
 */
export function startCassette({ path: file, mode = recordMode(), upstream = UPSTREAM_AT_LOAD, matchOn, bin = findLoopcheck(), timeoutMs = 30_000 }) {
  const args = ['record', '--listen', '--out', file, '--mode', mode, '--upstream', upstream];
  if (matchOn) args.push('--match-on', Array.isArray(matchOn) ? matchOn.join(',') : matchOn);
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    if (stderr.length < 64 * 1024) stderr += chunk;
  });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  const exited = new Promise((resolve) => child.once('close', (code) => resolve(code)));
  const why = (what) => `loopcheck record --listen on ${file} ${what}${stderr.trim() ? `:\n${stderr.trim()}` : ''}`;

  const stop = async () => {
    child.stdin.end();
    const code = await exited;
    process.off('exit', killNow);
    const lines = stdout.trim().split('\n').reverse();
    for (const line of lines) {
      try {
        const outcome = JSON.parse(line);
        if (outcome && Array.isArray(outcome.drift)) return outcome;
      } catch {
        // not the outcome line
      }
    }
    throw new Error(why(`ended with exit ${code} and no outcome`));
  };

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killNow();
      reject(new Error(why(`printed no URL within ${timeoutMs} ms`)));
    }, timeoutMs);
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error(why('exited before it listened')));
    });
    const onData = () => {
      const newline = stdout.indexOf('\n');
      if (newline < 0) return;
      child.stdout.off('data', onData);
      clearTimeout(timer);
      try {
        const started = JSON.parse(stdout.slice(0, newline));
        resolve({ baseUrl: started.base_url, replaying: Boolean(started.replaying), path: file, stop });
      } catch {
        killNow();
        reject(new Error(why('did not start')));
      }
    };
    child.stdout.on('data', onData);
  });
}

/** What a test whose requests drifted, or were not in its cassette, fails with; null when
 * they did neither. */
export function describeOutcome(outcome) {
  const lines = [];
  if (outcome.drift?.length) {
    lines.push(`the requests drifted from ${outcome.path}:`, ...outcome.drift.map((d) => `  ${d}`));
  }
  if (outcome.missing?.length) {
    lines.push(
      `requests not in ${outcome.path} (record them with LOOPCHECK_RECORD_MODE=new, or again with all):`,
      ...outcome.missing.map((m) => `  ${m}`),
    );
  }
  return lines.length ? lines.join('\n') : null;
}

/** Points the OpenAI SDK's environment at a started cassette; returns what undoes it. */
function pointAt(cassette) {
  const saved = { OPENAI_BASE_URL: process.env.OPENAI_BASE_URL, OPENAI_API_KEY: process.env.OPENAI_API_KEY };
  process.env.OPENAI_BASE_URL = cassette.baseUrl;
  if (cassette.replaying && !process.env.OPENAI_API_KEY) process.env.OPENAI_API_KEY = REPLAY_KEY;
  return () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** Stops a cassette and throws when its test drifted or asked what it does not hold. */
async function finish(cassette) {
  const outcome = await cassette.stop();
  const message = describeOutcome(outcome);
  if (message) {
    const error = new AssertionError({ message });
    Object.defineProperty(error, 'outcome', { value: outcome, enumerable: false });
    throw error;
  }
  return outcome;
}

/**
 * Runs `fn(cassette)` with the test's cassette started and OPENAI_BASE_URL pointing at
 * it; then fails the test if its requests drifted from the recording or were not in it.
 * `ctx` is the test's context; `options`: `path`, `matchOn`, `mode`, `upstream`.
 */
export async function withCassette(ctx, fn, options = {}) {
  const cassette = await startCassette({ path: options.path ?? cassettePath(ctx.task), ...options });
  const undo = pointAt(cassette);
  let result;
  try {
    result = await fn(cassette);
  } catch (err) {
    undo();
    await cassette.stop().catch(() => {});
    throw err;
  }
  undo();
  await finish(cassette);
  return result;
}

/**
 * Gives each test of the file (or of the `describe` it is called in) its cassette:
 * started in a `beforeEach`, checked in an `afterEach`. The object it returns has the
 * running test's `baseUrl`, `replaying` and `path`.
 */
export function useCassette(options = {}) {
  const current = {};
  let undo = null;
  beforeEach(async (ctx) => {
    const cassette = await startCassette({ path: options.path ?? cassettePath(ctx.task), ...options });
    Object.assign(current, { baseUrl: cassette.baseUrl, replaying: cassette.replaying, path: cassette.path, cassette });
    undo = pointAt(cassette);
  });
  afterEach(async () => {
    undo?.();
    undo = null;
    const { cassette } = current;
    if (cassette) {
      delete current.cassette;
      await finish(cassette);
    }
  });
  return current;
}
