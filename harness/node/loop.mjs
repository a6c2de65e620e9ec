// loopcheck's Node.js reference controller: a contract-v1 Responses tool loop on the
// official `openai` npm package (docs/contract.md). It behaves
// like harness/python/loop.py, in the idiom of the Node SDK.
//
// One round is one model request. A completed response's `function_call` items each get
// exactly one `function_call_output` (same `call_id`, same `caller`) in the next request; a
// response without calls is the final answer, unless a program just finished
// (`program_output`, no message): then the model answers in one more request.
//
// Every piece is exported and the loop calls the pieces through the mutable `impl` object,
// so a test (harness/mutants/*.mjs) can import this module, replace exactly one piece and
// run `main()`: ESM bindings are read-only from outside, an object's properties are not.

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { ResponseStream } from 'openai/lib/responses/ResponseStream';

export const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Ends the loop with a failed result (docs/contract.md). */
export class Stop extends Error {
  constructor(reason, detail) {
    super(detail);
    this.reason = reason;
    this.detail = detail;
  }
}

// stdout is reserved for the result line.
export const log = (...args) => console.error(...args);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Between polls of a background response (the fake answers each poll at once). */
const POLL_INTERVAL_MS = 20;
export const errorOutput = (message) => JSON.stringify({ error: String(message) });

/** POST JSON to the fixture backend: {status, text, body (parsed, or null)}. Throws on
 * transport errors, and a `TimeoutError` when no answer came within `timeoutMs`. */
export async function postJson(url, body, timeoutMs = 30_000) {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await answer.text();
  const { headers } = answer;
  try {
    return { status: answer.status, headers, text, body: JSON.parse(text) };
  } catch {
    return { status: answer.status, headers, text, body: null };
  }
}

/** Attempts at one call the backend keeps refusing (429, 5xx) before it is answered as
 * failed. */
export const CALL_ATTEMPTS = 3;

/** Whether a backend answer is worth resending under the same call_id. */
export function retryable(status) {
  return status === 429 || status >= 500;
}

/** Milliseconds to wait before resending: what the answer asks for (retry-after-ms, else
 * retry-after in seconds), else 50 ms; null when it asks for more than 60 s. */
export function retryWait(headers) {
  for (const [name, scale] of [['retry-after-ms', 1], ['retry-after', 1000]]) {
    const wait = Number.parseFloat(headers.get(name) ?? '') * scale;
    if (wait > 0) return wait <= 60_000 ? wait : null;
  }
  return 50;
}

/** The task's registry: its function tools only. Hosted tools such as
 * {"type": "programmatic_tool_calling"} are sent to the API but run nothing here. */
export function makeTools(task, toolsUrl) {
  // strict: false because task schemas may use keywords Ajv's strict mode refuses;
  // validateFormats: false because `format` is an annotation (as in Python's jsonschema).
  const ajv = new Ajv({ strict: false, validateFormats: false });
  const registry = new Map();
  // A namespace's function and custom tools are registered as `namespace.name`, each
  // remembering its namespace: a call finds one only under that namespace.
  const flat = task.tools.flatMap((tool) =>
    tool.type === 'namespace'
      ? (tool.tools ?? []).map((member) => ({ ...member, name: `${tool.name}.${member.name}`, namespace: tool.name }))
      : [tool],
  );
  for (const tool of flat) {
    if (tool.type === 'computer' || tool.type === 'computer_use_preview') {
      // The computer has no name: its calls carry actions, run by /call/computer.
      registry.set('computer', { computer: true, allowedCallers: ['direct'] });
      continue;
    }
    if (tool.type === 'custom') {
      // Free-form text input: a `regex` grammar must match the whole input; a `lark`
      // grammar is not checked here.
      const format = tool.format ?? {};
      const grammar =
        format.type === 'grammar' && format.syntax === 'regex' ? new RegExp(`^(?:${format.definition})$`) : null;
      registry.set(tool.name, { custom: true, grammar, allowedCallers: ['direct'], namespace: tool.namespace ?? null });
      continue;
    }
    if (TYPED_TOOLS.includes(tool.type)) {
      // Shell and patch tools have no name: each is known by its type.
      registry.set(tool.type, { typed: true, allowedCallers: tool.allowed_callers ?? ['direct'] });
      continue;
    }
    if (tool.type !== 'function') continue;
    const validate = tool.parameters == null ? null : ajv.compile(tool.parameters);
    registry.set(tool.name, {
      validate,
      allowedCallers: tool.allowed_callers ?? ['direct'],
      namespace: tool.namespace ?? null,
    });
  }
  return {
    // A client tool search looks through the deferred tools (`defer_loading: true`).
    search: task.tools.some((tool) => tool.type === 'tool_search' && tool.execution === 'client'),
    catalogue: task.tools.filter((tool) => tool.defer_loading === true),
    url: toolsUrl.replace(/\/+$/, ''),
    principal: task.principal,
    approvalRequired: new Set(task.approval_required ?? []),
    registry,
    // The optional budgets: tool executions (distinct call_ids), the wait for one tool
    // request, and the case's deadline (main sets it: it counts from the start).
    maxCalls: task.max_tool_calls ?? null,
    timeoutMs: task.tool_timeout_ms ?? null,
    executed: new Set(),
    deadline: null,
  };
}

/** The case's deadline, counted from now (the controller's start on the case): the
 * instant and a signal that aborts at it; null without `deadline_ms`. */
export function startClock(task) {
  if (task.deadline_ms == null) return null;
  return { at: performance.now() + task.deadline_ms, signal: AbortSignal.timeout(task.deadline_ms) };
}

/** Milliseconds left before the deadline (Infinity without one); throws Stop('timeout')
 * once it has passed: nothing new may start after it. */
export function timeLeft(deadline) {
  if (!deadline) return Infinity;
  const left = deadline.at - performance.now();
  if (left <= 0) throw new Stop('timeout', 'deadline_ms passed');
  return left;
}

/** Runs one API step (`step(options)`) unless the deadline has passed, with the
 * deadline's signal as the SDK request option: at the deadline the request in flight is
 * aborted and not retried (the SDK never retries a caller's abort). */
export async function beforeDeadline(deadline, step) {
  timeLeft(deadline);
  try {
    return await step(deadline ? { signal: deadline.signal } : {});
  } catch (err) {
    if (deadline?.signal.aborted) throw new Stop('timeout', 'deadline_ms passed');
    throw err;
  }
}

/** The output to send for one call. A rejected or failed call is answered with an error
 * output so the model can go on, never dropped; it throws only Stop, when a budget ends the
 * loop (the call would go past max_tool_calls, or the deadline passed). */
export async function handleCall(tools, call) {
  if (call.type in TYPED_CALLS) return typedAnswer(call, await handleTyped(tools, call));
  // Everything the model sent is checked before anything is dispatched. The lookup is an
  // exact Map key: no trimming, no namespace stripping.
  const name = registeredName(call);
  const found = tools.registry.get(name);
  const entry = found && (found.namespace ?? null) === (call.namespace ?? null) ? found : undefined;
  if (!entry || entry.computer || Boolean(entry.custom) !== (call.type === 'custom_tool_call')) {
    return errorOutput(`unknown tool: ${name}`);
  }
  // The backend runs a namespaced tool with its namespace.
  const namespaced = (body) => (call.namespace == null ? body : { ...body, namespace: call.namespace });
  if (entry.custom) {
    if (entry.grammar && !entry.grammar.test(call.input)) {
      return errorOutput(`input does not match the grammar of ${call.name}`);
    }
    return dispatch(tools, call, namespaced({ call_id: call.call_id, input: call.input, principal: tools.principal }));
  }
  const caller = call.caller?.type === 'program' ? 'programmatic' : 'direct';
  if (!entry.allowedCallers.includes(caller)) {
    return errorOutput('Function caller is excluded by allowed_callers.');
  }
  let args;
  try {
    args = JSON.parse(call.arguments);
  } catch (err) {
    return errorOutput(`invalid JSON arguments: ${err.message}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return errorOutput('invalid JSON arguments: expected a JSON object');
  }
  if (entry.validate && !entry.validate(args)) {
    const [first] = entry.validate.errors;
    return errorOutput(`arguments do not match the schema: ${first.instancePath || '/'} ${first.message}`);
  }
  return dispatch(tools, call, namespaced({ call_id: call.call_id, arguments: args, principal: tools.principal }));
}

/** The tools known by their type, and the call items that call them: item type -> [tool
 * name, the call's input field]. */
export const TYPED_CALLS = {
  shell_call: ['shell', 'action'],
  local_shell_call: ['local_shell', 'action'],
  apply_patch_call: ['apply_patch', 'operation'],
};
const TYPED_TOOLS = Object.values(TYPED_CALLS).map(([name]) => name);

/** A shell, local shell or patch call: its `action` or `operation` run on the tool named
 * by its type; the output (the backend's result as JSON, or an error output). */
async function handleTyped(tools, call) {
  const [name, field] = TYPED_CALLS[call.type];
  const entry = tools.registry.get(name);
  if (!entry?.typed) return errorOutput(`unknown tool: ${name}`);
  const caller = call.caller?.type === 'program' ? 'programmatic' : 'direct';
  if (!entry.allowedCallers.includes(caller)) return errorOutput('Tool caller is excluded by allowed_callers.');
  return dispatch(tools, { ...call, name }, { call_id: call.call_id, [field]: call[field], principal: tools.principal });
}

/** The answer fields of a shell, local shell or patch call from its output: the backend's
 * result as JSON, or this loop's own error output (`{"error": text}` alone, which no
 * result of these tools is). A shell call's output is the backend's chunks, a failure one
 * chunk with the reason in stderr and exit code 1; a local shell call's output is JSON
 * text, as a function's; a patch says `completed` or `failed` in its status. */
export function typedAnswer(call, output) {
  let parsed = null;
  try {
    parsed = JSON.parse(output);
  } catch {
    parsed = null;
  }
  const failed =
    parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) &&
    Object.keys(parsed).length === 1 && typeof parsed.error === 'string';
  if (call.type === 'shell_call') {
    const chunks = failed
      ? [{ stdout: '', stderr: parsed.error, outcome: { type: 'exit', exit_code: 1 } }]
      : parsed;
    const fields = { output: chunks };
    if (call.action?.max_output_length != null) fields.max_output_length = call.action.max_output_length;
    return fields;
  }
  if (call.type === 'apply_patch_call') {
    if (failed) return { status: 'failed', output: parsed.error };
    const result = parsed !== null && typeof parsed === 'object' ? parsed : {};
    return { status: result.status ?? 'completed', output: String(result.output ?? '') };
  }
  return { output };
}

/** The name a call's tool is registered under: `namespace.name` for a call that names a
 * namespace, its bare name otherwise. */
export function registeredName(call) {
  return call.namespace == null ? call.name : `${call.namespace}.${call.name}`;
}

/** The computer_call_output for a computer call: its action (or batch of actions)
 * performed on the backend once the approver approved its pending safety checks, answered
 * with the screenshot that came back and the approved checks acknowledged. A refused,
 * failed or unknown call is not performed: its screenshot has no image and it acknowledges
 * nothing. */
export async function handleComputer(tools, call) {
  const item = { type: 'computer_call_output', call_id: call.call_id, output: { type: 'computer_screenshot' } };
  if (!tools.registry.get('computer')?.computer) {
    log(`  ${call.call_id}: no computer tool offered, nothing performed`);
    return item;
  }
  const body = { call_id: call.call_id, principal: tools.principal };
  if (call.action != null) body.action = call.action;
  if (call.actions != null) body.actions = call.actions;
  const checks = call.pending_safety_checks ?? [];
  const request = { name: 'computer', call_id: call.call_id };
  let approved = false;
  const output = await dispatch(tools, request, body, {
    checks,
    onApproved: () => {
      approved = true;
    },
  });
  let result = null;
  try {
    result = JSON.parse(output);
  } catch {
    // not JSON: no screenshot
  }
  if (result !== null && typeof result === 'object') {
    for (const key of ['image_url', 'file_id']) if (key in result) item.output[key] = result[key];
  }
  if (approved && checks.length > 0) item.acknowledged_safety_checks = checks;
  return item;
}

/** The tool_search_output for a client tool search: run on the backend's
 * /call/tool_search with its arguments, answered with the catalogue's definitions of the
 * tools it found (none when the search failed, or the task offers no client search). */
export async function handleToolSearch(tools, call) {
  const item = { type: 'tool_search_output', call_id: call.call_id, execution: 'client', tools: [] };
  if (!tools.search) {
    log(`  ${call.call_id}: no client tool search offered, nothing searched`);
    return item;
  }
  const body = { call_id: call.call_id, arguments: call.arguments, principal: tools.principal };
  const output = await dispatch(tools, { name: 'tool_search', call_id: call.call_id }, body);
  let result = null;
  try {
    result = JSON.parse(output);
  } catch {
    // not JSON: nothing found
  }
  for (const name of Array.isArray(result?.tools) ? result.tools : []) {
    item.tools.push(...tools.catalogue.filter((tool) => tool.name === name));
  }
  return item;
}

/** Approval when the tool needs one (or, for a computer call, when it has pending safety
 * checks), then execution on the backend: the output to send. */
async function dispatch(tools, call, body, guard = { checks: [], onApproved: () => {} }) {
  if (!tools.executed.has(call.call_id)) {
    if (tools.maxCalls != null && tools.executed.size >= tools.maxCalls) {
      const detail = `${call.name} (${call.call_id}) would be tool execution ${tools.executed.size + 1}`;
      throw new Stop('max_tool_calls', `${detail}: max_tool_calls is ${tools.maxCalls}`);
    }
    tools.executed.add(call.call_id);
  }
  let answer;
  try {
    const guarded = guard.checks.length > 0;
    if (tools.approvalRequired.has(registeredName(call)) || guarded) {
      const asked = { ...body, name: call.name };
      if (guarded) asked.pending_safety_checks = guard.checks;
      const approval = await postJson(`${tools.url}/approvals`, asked);
      const decision = approval.body;
      if (approval.status !== 200 || decision === null || typeof decision !== 'object') {
        return errorOutput(`approval request failed: HTTP ${approval.status}`);
      }
      if (decision.approved === false) {
        return errorOutput(`approval denied: ${decision.reason || 'no reason given'}`);
      }
      if (decision.approved !== true || !decision.approval) {
        return errorOutput('approval request failed: malformed answer');
      }
      body.approval = decision.approval;
      guard.onApproved();
    }
    // 429 and 5xx are transient, and so is a tool that does not answer within
    // tool_timeout_ms: resending with the same call_id is safe because the backend
    // de-duplicates by it. 403 (denied), 409, 404 and 422 would fail again: relayed.
    for (let attempt = 1; ; attempt++) {
      // tool_timeout_ms, cut to the time left before the deadline (whole ms, as
      // AbortSignal.timeout takes them).
      const limit = Math.max(1, Math.floor(Math.min(tools.timeoutMs ?? 30_000, timeLeft(tools.deadline))));
      try {
        answer = await postJson(`${tools.url}/call/${encodeURIComponent(call.name)}`, body, limit);
      } catch (err) {
        if (err?.name !== 'TimeoutError') throw err;
        timeLeft(tools.deadline); // Stop('timeout') when it was the deadline
        log(`tool ${call.name} (${call.call_id}): no answer in time on attempt ${attempt}`);
        if (attempt === CALL_ATTEMPTS) return errorOutput(`tool timed out: no answer within ${limit} ms`);
        continue;
      }
      if (!retryable(answer.status)) break;
      log(`tool ${call.name} (${call.call_id}): HTTP ${answer.status} on attempt ${attempt}`);
      if (attempt === CALL_ATTEMPTS) return errorOutput('tool unavailable');
      const wait = retryWait(answer.headers);
      if (wait === null) return errorOutput(`tool unavailable: HTTP ${answer.status}, retry much later`);
      await sleep(wait);
    }
  } catch (err) {
    if (err instanceof Stop) throw err;
    return errorOutput(`tool backend unreachable: ${err.message}`);
  }
  const { status } = answer;
  const data = answer.body !== null && typeof answer.body === 'object' ? answer.body : {};
  if (status === 200 && 'result' in data) return resultText(answer.text, data);
  const error = data.error !== null && typeof data.error === 'object' ? data.error : {};
  const code = status === 403 ? 'forbidden' : error.code || `HTTP ${status}`;
  return errorOutput(`${code}: ${error.message || 'no message'}`);
}

/** The backend's `result` as the output string, relayed as the JSON text the backend wrote
 * when the body is exactly {"result": ...}: a JSON.parse/JSON.stringify round trip is lossy
 * in JavaScript (1200.0 comes back as 1200, integers beyond 2^53 are rounded), and the
 * model should see the tool's data as the tool wrote it. */
export function resultText(text, data) {
  const raw = Object.keys(data).length === 1 ? /^\s*\{\s*"result"\s*:([\s\S]*)\}\s*$/.exec(text) : null;
  return raw ? raw[1].trim() : JSON.stringify(data.result);
}

/** The call item types this loop runs, each with the type of the item that answers it. */
export const ANSWER_TYPES = {
  function_call: 'function_call_output',
  custom_tool_call: 'custom_tool_call_output',
  shell_call: 'shell_call_output',
  local_shell_call: 'local_shell_call_output',
  apply_patch_call: 'apply_patch_call_output',
  computer_call: 'computer_call_output',
  tool_search_call: 'tool_search_output',
};

/** The answer field naming the call, where it is not `call_id`: a local shell call's
 * output names it in its `id`. */
export const ANSWER_REF = { local_shell_call_output: 'id' };

/** The output item of the call's kind for a call. It echoes the call's `caller`: a
 * program's child output without it is rejected, and the program never resumes. */
export function outputItem(call, output) {
  const type = ANSWER_TYPES[call.type];
  // A typed call's answer comes as its fields; the other kinds' as the output text.
  const fields = output !== null && typeof output === 'object' ? output : { output };
  const item = { type, [ANSWER_REF[type] ?? 'call_id']: call.call_id, ...fields };
  if (call.caller != null) item.caller = call.caller;
  return item;
}

/** One output per call, in the calls' order, each computed from that very call. Sequential,
 * so approvals and side effects happen in the order the model issued them. */
export async function answerCalls(tools, calls) {
  const outputs = [];
  for (const call of calls) {
    if (call.type === 'tool_search_call') {
      const item = await impl.handleToolSearch(tools, call);
      log(`  ${call.call_id} tool_search -> ${item.tools.map((tool) => tool.name)}`);
      outputs.push(item);
      continue;
    }
    if (call.type === 'computer_call') {
      const item = await impl.handleComputer(tools, call);
      log(`  ${call.call_id} computer -> ${JSON.stringify(item.output).slice(0, 120)}`);
      outputs.push(item);
      continue;
    }
    const output = await impl.handleCall(tools, call);
    log(`  ${call.call_id} ${call.name ?? call.type} -> ${JSON.stringify(output)}`);
    outputs.push(impl.outputItem(call, output));
  }
  return outputs;
}

/** An MCP approval request put to the approver: the mcp_approval_response to send,
 * approving only on an explicit grant and giving the reason of a refusal. */
export async function decideApproval(tools, request) {
  let args;
  try {
    args = JSON.parse(request.arguments);
  } catch {
    args = request.arguments;
  }
  const body = {
    call_id: request.id,
    name: request.name,
    arguments: args,
    server_label: request.server_label,
    principal: tools.principal,
  };
  const decision = { type: 'mcp_approval_response', approval_request_id: request.id };
  let reason;
  try {
    const answer = await postJson(`${tools.url}/approvals`, body);
    if (answer.status === 200 && answer.body?.approved === true) return { ...decision, approve: true };
    reason =
      answer.status === 200 && answer.body?.approved === false
        ? answer.body.reason || 'no reason given'
        : `approval request failed: HTTP ${answer.status}`;
  } catch (err) {
    reason = `approval request failed: ${err.message}`;
  }
  return { ...decision, approve: false, reason };
}

/** One mcp_approval_response per MCP approval request, in their order. Hosted items
 * (web_search_call, mcp_call, ...) ran on the server and are only replayed. */
export async function answerApprovals(tools, requests) {
  const decisions = [];
  for (const request of requests) {
    const decision = await impl.decideApproval(tools, request);
    log(`  ${request.id} ${request.server_label}/${request.name} -> approve: ${decision.approve}`);
    decisions.push(decision);
  }
  return decisions;
}

/** A minimal shape check: the Node SDK returns the parsed JSON without validating it (its
 * types exist only at compile time), so a body the loop cannot read must fail the case
 * here, not as a TypeError deep inside. */
export function checked(response) {
  const fine =
    response !== null && typeof response === 'object' && typeof response.id === 'string' &&
    typeof response.status === 'string' && Array.isArray(response.output) &&
    response.output.every((item) => typeof item?.type === 'string') &&
    response.output
      .filter((item) => item.type === 'function_call')
      .every((c) => [c.call_id, c.name, c.arguments].every((field) => typeof field === 'string')) &&
    response.output
      .filter((item) => item.type === 'custom_tool_call')
      .every((c) => [c.call_id, c.name, c.input].every((field) => typeof field === 'string')) &&
    response.output
      .filter((item) => item.type === 'computer_call')
      .every((c) => typeof c.call_id === 'string' && (c.pending_safety_checks ?? []).every((k) => typeof k?.id === 'string'));
  if (!fine) {
    throw new Stop('api_error', `malformed response body: ${JSON.stringify(response)?.slice(0, 500)}`);
  }
  return response;
}

/** A streamed model request: the SDK's stream helper, whose accumulator throws on any
 * out-of-order event (a delta before its item, a changed id, ...), so a stream it accepts
 * is well-formed. Calls are only read from the terminal event: items seen before it may
 * still be cut short, and a response that never completes must run nothing. */
export async function streamResponse(client, body, options = {}) {
  // The helper derives argument parsers from `params.tools`: given a strict tool there, it
  // JSON.parses every call's arguments once the stream ends, so one malformed call would
  // throw instead of getting an error output (dispatch/malformed-arguments-streamed). So
  // the params carry no tools, and the wire body (the same JSON, tools included) is given
  // as the request option `body`, which the SDK sends in place of the params.
  const { tools, ...params } = body;
  return terminalResponse(client.responses.stream(params, { ...options, body: { ...body, stream: true } }));
}

/** The response of the terminal event of a stream helper's events (an HTTP stream's, or a
 * socket answer's). */
async function terminalResponse(stream) {
  for await (const event of stream) {
    // Leaving the loop aborts the rest of the stream: nothing after the terminal event counts.
    if (TERMINAL_EVENTS.has(event.type)) return checked(event.response);
    // The helper throws APIError on every `error` event, flat or nested; kept in case it stops.
    if (event.type === 'error') throw new Stop('api_error', `stream error ${event.code}: ${event.message}`);
  }
  throw new Stop('api_error', 'the stream ended before a terminal event');
}

// WebSocket mode (the task's `websocket`): every model request of the case goes as a
// `response.create` event on one connection to `/responses`, which answers with the events
// of a streamed HTTP create, one JSON message each. The connection is the SDK's
// `ResponsesWS` (on the `ws` package, loaded only in this mode); it is never asked to
// reconnect on its own: `ResponsesSocket` replaces a closed connection before a create,
// and retries a create the API refused, or that was lost before its answer started,
// exactly as the SDK retries an HTTP request.

/** Milliseconds to wait before the next attempt, as the SDK's `retryRequest` computes them:
 * `retry-after-ms`, else `retry-after` (seconds or a date), when within 60 s; else its
 * backoff. */
export function socketRetryDelay(client, headers, retriesRemaining, maxRetries) {
  let wait;
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (!Number.isNaN(ms)) wait = ms;
  const after = headers?.get('retry-after');
  if (after && wait === undefined) {
    const seconds = Number.parseFloat(after);
    wait = Number.isNaN(seconds) ? Date.parse(after) - Date.now() : seconds * 1000;
  }
  if (wait === undefined || !Number.isFinite(wait) || wait < 0 || wait > 60_000) {
    return client.calculateDefaultRetryTimeoutMillis(retriesRemaining, maxRetries);
  }
  return wait;
}

/** A create that got no answer but may be retried, as an HTTP request would be: the API
 * refused it (`refusal`: its status, error and headers), or the connection was lost, or
 * never made, before the answer's first event (no refusal). */
class Unanswered extends Error {
  constructor(detail, refusal = null) {
    super(detail);
    this.refusal = refusal;
  }
}

/** The refusal an `error` event with a status stands for: `{"type": "error", "status",
 * "error": {"type", "code", "message", "param", "headers"}}`, the headers being those the
 * HTTP answer would have had. */
export function refusalOf(event) {
  const nested = event.error !== null && typeof event.error === 'object' ? event.error : event;
  const { headers: fields, ...error } = nested;
  const headers = new Headers();
  for (const [name, value] of Object.entries(fields ?? {})) {
    try {
      if (typeof value === 'string') headers.set(name, value);
    } catch {
      // A name or value no HTTP answer could carry: an HTTP client would not see it either.
    }
  }
  return { status: event.status, error, headers };
}

/** The SDK's error for a refusal, as it throws for the same HTTP answer. */
const refusalError = ({ status, error, headers }) =>
  OpenAI.APIError.generate(status, { error }, undefined, headers);

/** One connection, opened at once; its events are read in order with `next`. */
class SocketConnection {
  constructor(ResponsesWS, client) {
    this.ws = new ResponsesWS(client);
    this.events = this.ws.stream();
    this.closed = false;
    /** The HTTP answer that refused the upgrade, if one did. */
    this.refusal = null;
    /** Errors that are a message the SDK could not read as an event, not a lost connection. */
    this.unreadable = new WeakSet();
    this.ws.on('close', (code, reason) => {
      this.closed = true;
      log(`the connection closed (${code}${reason ? `: ${reason}` : ''})`);
    });
    this.ws.on('error', (err) => {
      if (err.error) return; // an `error` event: read in order with the others
      // Without a cause and with the socket open, the SDK refused a message it received.
      if (err.cause === undefined && this.ws.socket.readyState === OPEN) this.unreadable.add(err);
      log(`socket: ${err.message}`);
    });
    // The upgrade refused (401, 429, ...): its answer is the API's, as over HTTP.
    const raw = this.ws.socket.platformSocket;
    raw.once('unexpected-response', (_request, answer) => {
      const chunks = [];
      answer.on('data', (chunk) => chunks.push(chunk));
      answer.on('end', () => {
        let body = null;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          // Not the API's JSON error: the status alone says what happened.
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(answer.headers)) {
          if (typeof value === 'string') headers.set(name, value);
        }
        const error = body?.error !== null && typeof body?.error === 'object' ? body.error : null;
        this.refusal = { status: answer.statusCode, error, headers };
        raw.terminate();
      });
    });
  }

  /** Whether the connection can carry no more creates. */
  get ended() {
    return this.closed || this.ws.socket.readyState > OPEN;
  }

  /** The next event (`{event}`), or `{lost: why}` when the connection ended or `timeout`
   * aborted; throws when `deadline` aborts, or on a message that is no event. */
  async next(deadline, timeout) {
    for (;;) {
      const item = await untilAborted(this.events.next(), deadline, timeout);
      if (item === null) return { lost: 'the answer timed out' };
      const { value, done } = item;
      if (done) return { lost: 'the connection closed' };
      if (value.type === 'message') return { event: value.message };
      if (value.type === 'close') {
        return { lost: `the connection closed (${value.code}${value.reason ? `: ${value.reason}` : ''})` };
      }
      if (value.type === 'raw') {
        throw new Stop('api_error', 'a message that is no JSON event, where an event was expected');
      }
      if (value.type === 'error') {
        // The SDK gives an `error` event as a WebSocketError that carries the event.
        if (value.error.error) return { event: value.error.error };
        if (this.unreadable.has(value.error)) {
          throw new Stop('api_error', `unreadable event: ${value.error.message}`);
        }
        // The connection failed: its close follows.
      }
    }
  }

  /** Closes the connection as a client that is done, waiting (briefly) for the close. */
  close() {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      const timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
      this.ws.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      try {
        this.ws.close({ code: 1000, reason: 'done' });
      } catch (err) {
        log(`closing the connection: ${err.message}`);
        clearTimeout(timer);
        resolve();
      }
    });
  }
}

/** WebSocket readyState OPEN; CLOSING and CLOSED come after it. */
const OPEN = 1;
/** How long a close at the end of the case may take before the process just exits. */
const CLOSE_TIMEOUT_MS = 1_000;

/** `promise`'s value; null once `timeout` aborts; throws `deadline`'s reason once it aborts.
 * Either signal may be missing. */
function untilAborted(promise, deadline, timeout = null) {
  return new Promise((resolve, reject) => {
    const stop = () => {
      deadline?.removeEventListener('abort', onDeadline);
      timeout?.removeEventListener('abort', onTimeout);
    };
    const onDeadline = () => {
      stop();
      reject(deadline.reason);
    };
    const onTimeout = () => {
      stop();
      resolve(null);
    };
    if (deadline?.aborted) return onDeadline();
    if (timeout?.aborted) return onTimeout();
    deadline?.addEventListener('abort', onDeadline);
    timeout?.addEventListener('abort', onTimeout);
    promise.then(
      (value) => {
        stop();
        resolve(value);
      },
      (err) => {
        stop();
        reject(err);
      },
    );
  });
}

/** Reads one answer on `connection`. Before its first event, an `error` event with a status
 * is the API refusing the create, and a lost connection leaves it unanswered: both are
 * thrown as Unanswered. From the first event on, the events go through the SDK's stream
 * accumulator exactly as an HTTP stream's do (an `error` event, an event out of order, or
 * the connection lost fails the case), and the response is the terminal event's. */
export async function readAnswer(connection, deadline, timeout) {
  const first = await connection.next(deadline, timeout);
  if (first.lost) {
    const { refusal } = connection;
    if (refusal) throw new Unanswered(`upgrade refused: HTTP ${refusal.status}`, refusal);
    throw new Unanswered(`the connection was lost before an answer: ${first.lost}`);
  }
  if (first.event.type === 'error' && typeof first.event.status === 'number') {
    const refusal = refusalOf(first.event);
    throw new Unanswered(`HTTP ${refusal.status}: ${refusal.error.message ?? 'no message'}`, refusal);
  }
  let pending = first.event;
  let failure = null;
  const encoder = new TextEncoder();
  const events = new ReadableStream(
    {
      // Asked for one event at a time (highWaterMark 0), so nothing past the terminal
      // event is read: the next create's answer stays on the connection.
      async pull(controller) {
        try {
          const next = pending ? { event: pending } : await connection.next(deadline, timeout);
          pending = null;
          if (next.lost) {
            log(`the event stream broke: ${next.lost}`);
            controller.close();
            return;
          }
          controller.enqueue(encoder.encode(`${JSON.stringify(next.event)}\n`));
          if (TERMINAL_EVENTS.has(next.event.type) || next.event.type === 'error') controller.close();
        } catch (err) {
          failure = err;
          controller.error(err);
        }
      },
    },
    { highWaterMark: 0 },
  );
  try {
    return await terminalResponse(ResponseStream.fromReadableStream(events));
  } catch (err) {
    throw failure ?? err;
  }
}

/** The case's WebSocket: one connection, opened at the first create, replaced when the
 * server closed it, and closed at the end of the case. */
export class ResponsesSocket {
  constructor(client) {
    this.client = client;
    this.connection = null;
  }

  /** One model request: `body` (a streamed create's) as a `response.create`, retried as the
   * SDK retries an HTTP request (408, 409, 429, 5xx unless `x-should-retry` says otherwise,
   * and a connection lost before the answer; at most `maxRetries` times, after the wait the
   * refusal's headers ask for, else the SDK's backoff). `options.signal` is the deadline. */
  async create(body, options = {}) {
    // `stream` is implicit on a socket and `background` not served on one.
    const { stream, background, ...fields } = body;
    const event = { type: 'response.create', ...fields };
    const { maxRetries } = this.client;
    for (let retriesRemaining = maxRetries; ; retriesRemaining--) {
      let unanswered;
      try {
        return await this.attempt(event, options.signal);
      } catch (err) {
        if (!(err instanceof Unanswered)) throw err;
        unanswered = err;
      }
      const { refusal } = unanswered;
      const retry = retriesRemaining > 0 && (refusal === null || (await this.client.shouldRetry(refusal)));
      if (!retry) {
        if (refusal) throw refusalError(refusal);
        throw new OpenAI.APIConnectionError({ message: unanswered.message });
      }
      const wait = socketRetryDelay(this.client, refusal?.headers, retriesRemaining, maxRetries);
      log(`${unanswered.message}; retrying in ${Math.round(wait)} ms`);
      await untilAborted(sleep(wait), options.signal);
    }
  }

  /** Sends the create once, on the open connection or a new one, and reads its answer
   * within the client's request timeout. */
  async attempt(event, deadline) {
    if (this.connection?.ended) {
      log('the server closed the connection since the last answer; reconnecting');
      this.connection = null;
    }
    if (!this.connection) {
      const { ResponsesWS } = await import('openai/resources/responses/ws');
      this.connection = new SocketConnection(ResponsesWS, this.client);
    }
    const { connection } = this;
    connection.ws.send(event);
    try {
      return await readAnswer(connection, deadline, AbortSignal.timeout(this.client.timeout));
    } catch (err) {
      // A refusal leaves the connection open; after anything else it is lost, or unusable.
      if (!(err instanceof Unanswered && err.refusal && !connection.ended)) {
        this.connection = null;
        await connection.close();
      }
      throw err;
    }
  }

  /** Closes the connection, if one is open. */
  async close() {
    await this.connection?.close();
    this.connection = null;
  }
}

/** A model request over the case's socket. */
export async function socketResponse(socket, body, options = {}) {
  return socket.create(body, options);
}

/** One model request. The SDK retries it (maxRetries 2) on connection errors, 408, 409,
 * 429 and 5xx, honouring retry-after(-ms) and x-should-retry, always with the same body;
 * a stream is never retried once it has started. Background responses are polled with
 * `retrieve` until they leave `queued`/`in_progress`. `options` are the SDK's request
 * options (the deadline's `signal`). With a `socket` (WebSocket mode) the request goes
 * as a `response.create` on it instead. */
export async function send(client, body, options = {}, socket = null) {
  let response = socket
    ? await impl.socketResponse(socket, body, options)
    : body.stream
      ? await impl.streamResponse(client, body, options)
      : checked(await client.responses.create(body, options));
  while (body.background && (response.status === 'queued' || response.status === 'in_progress')) {
    await sleep(POLL_INTERVAL_MS);
    response = checked(await client.responses.retrieve(response.id, {}, options));
  }
  return response;
}

/** Only a completed response continues the loop; anything else ends the case. */
export function checkStatus(response) {
  const { status } = response;
  if (status === 'incomplete') {
    const reason = response.incomplete_details?.reason || 'no reason given';
    throw new Stop('incomplete', `response incomplete: ${reason}`);
  }
  if (status === 'failed') {
    throw new Stop('response_failed', `response failed: ${response.error?.message || 'no error message'}`);
  }
  if (status === 'cancelled') throw new Stop('cancelled', 'response was cancelled');
  if (status !== 'completed') {
    throw new Stop('api_error', `unexpected response status ${JSON.stringify(status)}`);
  }
}

/** Whether a completed response ends the loop: no calls pending, and not a program's
 * result alone (the model answers from it in one more request). */
export function isFinal(response) {
  const kinds = new Set(response.output.map((item) => item.type));
  const calls = response.output.some(isPending);
  // An MCP approval request awaits the controller's decision, as a call awaits its output.
  const approvals = kinds.has('mcp_approval_request');
  return !calls && !approvals && (!kinds.has('program_output') || kinds.has('message'));
}

/** Whether an output item is a call this loop answers: a server-executed tool search is
 * hosted, replayed only. */
export function isPending(item) {
  return item.type in ANSWER_TYPES && (item.type !== 'tool_search_call' || item.execution === 'client');
}

/** The answer: the text of every output_text part of every message (the SDKs' `output_text`,
 * as the API computes it, computed here since stream events do not carry it). A refusal is no answer. */
export function finalAnswer(response) {
  const messages = response.output.filter((item) => item.type === 'message');
  const parts = messages.at(-1)?.content ?? [];
  const refusal = parts.find((part) => part.type === 'refusal');
  // A refusal part refuses, whatever text sits beside it: that text is no answer.
  if (refusal) {
    throw new Stop('refusal', refusal.refusal);
  }
  return messages
    .flatMap((item) => item.content ?? [])
    .filter((part) => part.type === 'output_text')
    .map((part) => part.text)
    .join('');
}

/** The final message checked against the task's `text_format` (a `json_schema` config):
 * it must parse as JSON and satisfy the schema, or the case fails with reason
 * `invalid_output`. The answer reported is the message text as the model wrote it. */
export function structuredAnswer(text, textFormat) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Stop('invalid_output', `the final message is not JSON: ${err.message}`);
  }
  const validate = new Ajv({ strict: false, validateFormats: false, allErrors: false }).compile(
    textFormat.schema ?? {},
  );
  if (!validate(value)) {
    const [error] = validate.errors;
    const missing = error.params?.missingProperty;
    const where = error.instancePath || '(the top level)';
    const what = missing ? `"${missing}" is a required property` : error.message;
    throw new Stop('invalid_output', `the final message breaks the schema ${JSON.stringify(textFormat.name)} at ${where}: ${what}`);
  }
  return text;
}

/** The context compacted by `POST /responses/compact`: its output (the user messages and
 * one `compaction` item) replaces everything sent so far, verbatim. */
export async function compact(client, state, options = {}) {
  const body = { model: state.base.model, input: state.context };
  if (state.base.instructions != null) body.instructions = state.base.instructions;
  const compacted = await client.responses.compact(body, options);
  log(`  compacted ${state.context.length} item(s) into ${compacted.output.length}`);
  return compacted.output.map(withoutNulls);
}

/** Whether the context is compacted after this round (stateless mode only: the other
 * modes keep their context on the server). */
export function compactsNow(task, round) {
  return task.state === 'stateless' && task.compact_after_rounds === round;
}

/** A JSON value without its null-valued keys, at any depth (arrays keep their length). */
const withoutNulls = (value) =>
  Array.isArray(value)
    ? value.map(withoutNulls)
    : value !== null && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value).filter(([, v]) => v != null).map(([k, v]) => [k, withoutNulls(v)]),
        )
      : value;

/** Output items as stateless input: the keys the server sent (so `program` items keep
 * their code and fingerprint verbatim), minus nulls (as Python's `exclude_none`) and
 * `status` on reasoning, which the API rejects in input. */
export function replayItems(output) {
  return output.map((item) => {
    const data = withoutNulls(item);
    if (data.type === 'reasoning') delete data.status;
    return data;
  });
}

/** The loop's state before the first request. Neither previous_response_id nor a
 * conversation carries instructions or tools: they go out with every request. */
export async function initialState(task, client, options = {}) {
  const base = { model: task.model, tools: task.tools, parallel_tool_calls: true };
  if (task.instructions != null) base.instructions = task.instructions;
  if (task.stream) base.stream = true;
  if (task.background) base.background = true;
  // Structured output and server-side compaction are asked of every response.
  if (task.text_format != null) base.text = { format: task.text_format };
  if (task.context_management != null) base.context_management = task.context_management;
  const first = task.input;
  const state = { mode: task.state, base, newItems: first, context: null, previousResponseId: null };
  if (task.state === 'stateless') {
    // Background responses are stored; stateless means store: false.
    if (task.background) throw new Stop('unsupported', 'background needs stored responses');
    Object.assign(base, { store: false, include: ['reasoning.encrypted_content'] });
    state.context = typeof first === 'string' ? [{ role: 'user', content: first }] : [...first];
  } else if (task.state === 'conversation') {
    base.conversation = (await client.conversations.create({}, options)).id;
  } else if (task.state !== 'previous_response_id') {
    throw new Stop('unsupported', `state mode ${JSON.stringify(task.state)} is not supported`);
  }
  // What the task asks to include, beside the mode's own.
  const include = [...(base.include ?? [])];
  for (const value of task.include ?? []) if (!include.includes(value)) include.push(value);
  if (include.length > 0) base.include = include;
  return state;
}

/** The next request's body: stateless replays the whole context, the other modes send
 * only the new items (chained to the latest response, or added to the conversation). */
export function requestBody(state) {
  const body = { ...state.base, input: state.mode === 'stateless' ? state.context : state.newItems };
  if (state.previousResponseId) body.previous_response_id = state.previousResponseId;
  return body;
}

/** Carries the round into the state: the response's items plus our outputs. */
export function advance(state, response, outputs) {
  if (state.mode === 'stateless') state.context.push(...impl.replayItems(response.output), ...outputs);
  else state.newItems = outputs;
  if (state.mode === 'previous_response_id') state.previousResponseId = response.id;
}

/** The loop; returns the answer text or throws Stop. `deadline` is startClock's. */
export async function run(task, client, tools, deadline = null) {
  const socket = task.websocket ? new ResponsesSocket(client) : null;
  try {
    return await rounds(task, client, tools, deadline, socket);
  } finally {
    await socket?.close();
  }
}

/** The rounds of `run`, each model request on `socket` when there is one. */
async function rounds(task, client, tools, deadline, socket) {
  const state = await beforeDeadline(deadline, (options) => impl.initialState(task, client, options));
  const maxRounds = task.max_rounds ?? 10;
  for (let round = 1; round <= maxRounds; round++) {
    const body = impl.requestBody(state);
    const response = await beforeDeadline(deadline, (options) => impl.send(client, body, options, socket));
    impl.checkStatus(response);
    const calls = response.output.filter(isPending);
    const kinds = [...new Set(response.output.map((item) => item.type))].sort();
    log(`round ${round}/${maxRounds}: ${calls.length} function call(s), items ${kinds}`);
    if (impl.isFinal(response)) {
      const text = impl.finalAnswer(response);
      return task.text_format == null ? text : impl.structuredAnswer(text, task.text_format);
    }
    // These outputs (or the program's result) could never be sent back: execute nothing.
    if (round === maxRounds) throw new Stop('max_rounds', 'model kept calling tools');
    const requests = response.output.filter((item) => item.type === 'mcp_approval_request');
    const outputs = await impl.answerCalls(tools, calls);
    outputs.push(...(await impl.answerApprovals(tools, requests)));
    impl.advance(state, response, outputs);
    if (impl.compactsNow(task, round)) {
      state.context = await beforeDeadline(deadline, (options) => impl.compact(client, state, options));
    }
  }
  throw new Stop('max_rounds', 'max_rounds allows no model request');
}

/** OPENAI_BASE_URL and OPENAI_API_KEY come from the environment. */
export function makeClient() {
  return new OpenAI({ maxRetries: 2 });
}

/** Reads the task, runs the loop, prints the result line; never throws. */
export async function main() {
  // A stray rejection (say, from a stream aborted after its terminal event) must not kill
  // the process before it prints its result line.
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err?.stack ?? err}`));
  let result;
  try {
    const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
    const deadline = impl.startClock(task);
    const tools = impl.makeTools(task, process.env.LOOPCHECK_TOOLS_URL);
    tools.deadline = deadline;
    result = { status: 'completed', output_text: await impl.run(task, impl.makeClient(), tools, deadline) };
  } catch (err) {
    if (err instanceof Stop) {
      result = { status: 'failed', reason: err.reason, detail: err.detail };
    } else {
      // OpenAI.APIError once the SDK's retries are spent (or from an in-stream error
      // event), a broken stream, or a bug: still a result line.
      log(`controller error: ${err?.stack ?? err}`);
      const detail = `${err?.constructor?.name ?? 'Error'}: ${err?.message ?? err}`;
      result = { status: 'failed', reason: 'api_error', detail };
    }
  }
  // Exit once the line is written: idle keep-alive sockets must not hold the process open.
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

/** Every piece the loop calls; replace one to inject a defect (see harness/mutants/). */
export const impl = {
  makeTools, handleCall, handleComputer, handleToolSearch, outputItem, answerCalls, decideApproval, answerApprovals,
  streamResponse, socketResponse, send, checkStatus, isFinal,
  finalAnswer, replayItems, initialState, requestBody, advance, run, makeClient, startClock,
  structuredAnswer, compact, compactsNow,
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
