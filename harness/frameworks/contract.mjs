// The controller-contract plumbing the Node adapters share (docs/contract.md): reading the
// task, the fixture backend, the result line and persistent mode. It decides nothing about
// the loop: what to run, validate, retry or stop is the framework's.
//
// An adapter imports it as `../contract.mjs`. install.sh links this file into the install
// folder beside the adapters' folders, so the relative path holds there as in the source
// tree; it imports nothing but Node's own modules, so it needs no node_modules.

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

// stdout is reserved for the result line.
export const log = (...args) => console.error(...args);

/** POST JSON: {status, text, body (parsed, or null)}. */
export async function postJson(url, body, headers = {}) {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  try {
    return { status: answer.status, text, body: JSON.parse(text) };
  } catch {
    return { status: answer.status, text, body: null };
  }
}

/** Runs one call on the fixture backend as the framework hands it over, asking the
 * approver first when the task requires an approval for the tool. Returns the backend's
 * result, or the approver's refusal as the text "approval denied: <reason>" (the backend
 * is then not called); throws on any other backend answer, which is how an SDK tool body
 * reports a failure. */
export async function runCall(task, name, callId, args) {
  const toolsUrl = process.env.LOOPCHECK_TOOLS_URL.replace(/\/+$/, '');
  const body = { call_id: callId, arguments: args, principal: task.principal };
  if ((task.approval_required ?? []).includes(name)) {
    const approval = await postJson(`${toolsUrl}/approvals`, { ...body, name });
    if (approval.body?.approved !== true) return `approval denied: ${approval.body?.reason ?? approval.text}`;
    body.approval = approval.body.approval;
  }
  const answer = await postJson(`${toolsUrl}/call/${encodeURIComponent(name)}`, body);
  if (answer.status === 200 && answer.body && 'result' in answer.body) return answer.body.result;
  throw new Error(`tool backend answered HTTP ${answer.status}: ${answer.text}`);
}

/** An error for a task the framework cannot run (a state mode it lacks). */
export function unsupported(message) {
  return Object.assign(new Error(message), { reason: 'unsupported' });
}

/** Prints the result line of `runCase(task)`, or of `failure(err, detail)` for an error it
 * threw: for the task file of LOOPCHECK_TASK, then exits whatever the SDK left open; or,
 * without it, for each case line on standard input (persistent mode, contract section 9),
 * so that the framework is loaded once per worker; each case takes its own URLs and key
 * from its line. */
export async function serve(runCase, failure) {
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err?.stack ?? err}`));
  // A framework's own console output (the AI SDK's warnings use console.info) goes to
  // stderr: stdout carries only result lines, one per case in persistent mode.
  console.log = console.info = console.debug = log;
  const print = (result) => new Promise((done) => process.stdout.write(`${JSON.stringify(result)}\n`, done));
  if (process.env.LOOPCHECK_TASK) {
    await print(await resultOf(runCase, failure, JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'))));
    process.exit(0);
  }
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const request = JSON.parse(line);
    Object.assign(process.env, request.env);
    await print(await resultOf(runCase, failure, request.task));
  }
  process.exit(0);
}

async function resultOf(runCase, failure, task) {
  try {
    return await runCase(task);
  } catch (err) {
    log(`run error: ${err?.stack ?? err}`);
    const detail = `${err?.constructor?.name ?? err?.name ?? 'Error'}: ${err?.message ?? err}`;
    return err?.reason === 'unsupported' ? { status: 'failed', reason: 'unsupported', detail } : failure(err, detail);
  }
}
