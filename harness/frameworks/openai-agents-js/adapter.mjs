// loopcheck contract adapter (docs/contract.md) for the OpenAI Agents SDK for TypeScript
// (@openai/agents). It maps the task onto an Agent and the SDK's own `run` loop with the
// SDK's defaults: the adapter validates, retries and budgets nothing itself, so the verdicts
// judge the framework, not the adapter.
//
// The install step symlinks this file and its manifest into <dir>/openai-agents-js/, beside its
// packages (ESM resolves them from the file's location), and runs it as:
//   node --preserve-symlinks --preserve-symlinks-main <dir>/openai-agents-js/adapter.mjs

import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import {
  Agent,
  MaxTurnsExceededError,
  ModelRefusalError,
  programmaticToolCallingTool,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
  tool,
} from '@openai/agents';

// stdout is reserved for the result line.
const log = (...args) => console.error(...args);

/** POST JSON to the fixture backend: {status, text, body (parsed, or null)}. */
async function postJson(url, body) {
  const answer = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  try {
    return { status: answer.status, text, body: JSON.parse(text) };
  } catch {
    return { status: answer.status, text, body: null };
  }
}

/** One SDK function tool per task tool: the task's name, description, JSON schema and
 * `strict` (left unset when the task leaves it unset: the SDK then defaults to true, as the
 * API does), whose body calls the fixture backend. */
function makeTool(definition, task, toolsUrl) {
  const needsApprover = (task.approval_required ?? []).includes(definition.name);
  return tool({
    name: definition.name,
    description: definition.description ?? '',
    parameters: definition.parameters ?? { type: 'object', properties: {} },
    ...(definition.strict === undefined ? {} : { strict: definition.strict }),
    ...(definition.allowed_callers ? { allowedCallers: definition.allowed_callers } : {}),
    async execute(args, _runContext, details) {
      // The SDK hands the model's function_call item to the tool body.
      const callId = details?.toolCall?.callId;
      const body = { call_id: callId, arguments: args, principal: task.principal };
      if (needsApprover) {
        const approval = await postJson(`${toolsUrl}/approvals`, { ...body, name: definition.name });
        if (approval.body?.approved !== true) {
          // Refused: the reason is the call's result; the backend is not called.
          return `approval denied: ${approval.body?.reason ?? approval.text}`;
        }
        body.approval = approval.body.approval;
      }
      const answer = await postJson(`${toolsUrl}/call/${encodeURIComponent(definition.name)}`, body);
      if (answer.status === 200 && answer.body && 'result' in answer.body) return answer.body.result;
      // A thrown error is how an SDK tool reports a failure: the SDK's errorFunction turns
      // it into the call's output.
      throw new Error(`tool backend answered HTTP ${answer.status}: ${answer.text}`);
    },
  });
}

/** The SDK's tools for the task: function tools, plus the hosted tools the SDK offers. */
function makeTools(task, toolsUrl) {
  const tools = [];
  for (const definition of task.tools) {
    if (definition.type === 'function') tools.push(makeTool(definition, task, toolsUrl));
    else if (definition.type === 'programmatic_tool_calling') tools.push(programmaticToolCallingTool());
    else log(`hosted tool ${definition.type} has no SDK equivalent here; not sent`);
  }
  return tools;
}

/** The SDK's run options and model settings for the task's state mode. */
async function stateOptions(task, client) {
  if (task.state === 'stateless') {
    // The runner replays the whole history by default; store: false makes it stateless, and
    // reasoning items need their encrypted content to be replayable.
    return {
      modelSettings: { store: false, providerData: { include: ['reasoning.encrypted_content'] } },
      runOptions: {},
    };
  }
  if (task.state === 'conversation') {
    // The SDK continues a conversation it is given; creating one is the caller's job.
    const conversation = await client.conversations.create({});
    return { modelSettings: {}, runOptions: { conversationId: conversation.id } };
  }
  // previous_response_id: the runner chains only from a previousResponseId it is given, so a
  // fresh run cannot chain from its first response (the manifest omits this mode).
  throw Object.assign(new Error(`state mode ${task.state} is not supported`), { reason: 'unsupported' });
}

/** The failure result for an error the SDK raised. */
function failure(err) {
  const detail = `${err?.constructor?.name ?? 'Error'}: ${err?.message ?? err}`;
  if (err?.reason === 'unsupported') return { status: 'failed', reason: 'unsupported', detail };
  if (err instanceof MaxTurnsExceededError) return { status: 'failed', reason: 'max_rounds', detail };
  if (err instanceof ModelRefusalError) return { status: 'failed', reason: 'refusal', detail: err.refusal };
  // The SDK's ModelBehaviorError names the terminal state of an unsuccessful response.
  const terminal = /"response\.(incomplete|failed|cancelled)"/.exec(err?.message ?? '');
  if (terminal) {
    const reason = { incomplete: 'incomplete', failed: 'response_failed', cancelled: 'cancelled' }[terminal[1]];
    return { status: 'failed', reason, detail };
  }
  return { status: 'failed', reason: 'api_error', detail };
}

async function main() {
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err?.stack ?? err}`));
  let result;
  try {
    const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
    const toolsUrl = process.env.LOOPCHECK_TOOLS_URL.replace(/\/+$/, '');
    // The SDK's default client settings, pointed at the contract's API and key.
    const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
    setDefaultOpenAIClient(client);
    setOpenAIAPI('responses');
    // Traces would be exported to api.openai.com; they play no part in the loop.
    setTracingDisabled(true);
    const { modelSettings, runOptions } = await stateOptions(task, client);
    const agent = new Agent({
      name: 'loopcheck',
      instructions: task.instructions,
      model: task.model,
      modelSettings,
      tools: makeTools(task, toolsUrl),
    });
    const options = { ...runOptions, maxTurns: task.max_rounds };
    let outcome;
    if (task.stream) {
      outcome = await run(agent, task.input, { ...options, stream: true });
      // Drain the events; `completed` settles when the run ends, and rejects on its errors.
      for await (const _event of outcome) { /* events are not needed */ }
      await outcome.completed;
      if (outcome.error) throw outcome.error;
    } else {
      outcome = await run(agent, task.input, options);
    }
    const text = outcome.finalOutput;
    result = { status: 'completed', output_text: typeof text === 'string' ? text : text == null ? '' : JSON.stringify(text) };
  } catch (err) {
    log(`run error: ${err?.stack ?? err}`);
    result = failure(err);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

await main();
