// loopcheck contract adapter (docs/contract.md) for the Vercel AI SDK (`ai`) with its
// OpenAI provider on the Responses API (`@ai-sdk/openai`, `openai.responses(model)`). It
// maps the task onto `generateText` / `streamText` and their multi-step tool loop with the
// SDK's defaults: the adapter validates, retries and budgets nothing itself, so the verdicts
// judge the framework, not the adapter.
//
// The install step symlinks this file and its manifest into <dir>/ai-sdk/, beside its
// packages (ESM resolves them from the file's location), and runs it as:
//   node --preserve-symlinks --preserve-symlinks-main <dir>/ai-sdk/adapter.mjs

import { readFileSync } from 'node:fs';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';

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

/** One SDK tool per task function tool: the task's description, raw JSON schema
 * (`jsonSchema`) and `strict`, whose body calls the fixture backend. */
function makeTool(definition, task, toolsUrl) {
  const needsApprover = (task.approval_required ?? []).includes(definition.name);
  return tool({
    description: definition.description,
    inputSchema: jsonSchema(definition.parameters ?? { type: 'object', properties: {} }),
    ...(definition.strict === undefined ? {} : { strict: definition.strict }),
    async execute(args, { toolCallId }) {
      const body = { call_id: toolCallId, arguments: args, principal: task.principal };
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
      // A thrown error is how an SDK tool reports a failure: the SDK sends it to the model as
      // the call's tool-error result.
      throw new Error(`tool backend answered HTTP ${answer.status}: ${answer.text}`);
    },
  });
}

/** The OpenAI provider options for the task's state mode. */
async function stateOptions(task) {
  if (task.state === 'stateless') {
    // The SDK replays the whole history each step; store: false makes it stateless (the
    // provider then asks for reasoning.encrypted_content by itself).
    return { store: false };
  }
  if (task.state === 'conversation') {
    // The provider continues a conversation it is given; creating one is the caller's job.
    const answer = await fetch(`${process.env.OPENAI_BASE_URL.replace(/\/+$/, '')}/conversations`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
      body: '{}',
    });
    if (!answer.ok) throw new Error(`creating the conversation: HTTP ${answer.status}`);
    return { conversation: (await answer.json()).id };
  }
  // previous_response_id: `previousResponseId` is one fixed option for every step of a
  // run, so the SDK cannot chain each step to the one before (the manifest omits this mode).
  throw Object.assign(new Error(`state mode ${task.state} is not supported`), { reason: 'unsupported' });
}

/** The result line for how the SDK's run ended. */
function resultOf(finishReason, text, steps) {
  // The step limit stops the loop after a step that still asked for tools.
  if (finishReason === 'tool-calls') {
    return { status: 'failed', reason: 'max_rounds', detail: `stopped after ${steps} step(s) with tool calls pending` };
  }
  // The provider turns a refusal into text and the finish reason content-filter, the
  // reason it also gives an incomplete response cut by the content filter (with no text).
  if (finishReason === 'content-filter' && text) return { status: 'failed', reason: 'refusal', detail: text };
  if (finishReason === 'length' || finishReason === 'content-filter') {
    return { status: 'failed', reason: 'incomplete', detail: `finish reason ${finishReason}` };
  }
  if (finishReason === 'error') return { status: 'failed', reason: 'api_error', detail: 'finish reason error' };
  return { status: 'completed', output_text: text ?? '' };
}

function failure(err) {
  const detail = `${err?.constructor?.name ?? err?.name ?? 'Error'}: ${err?.message ?? err}`;
  if (err?.reason === 'unsupported') return { status: 'failed', reason: 'unsupported', detail };
  return { status: 'failed', reason: 'api_error', detail };
}

async function main() {
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err?.stack ?? err}`));
  let result;
  try {
    const task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
    const toolsUrl = process.env.LOOPCHECK_TOOLS_URL.replace(/\/+$/, '');
    const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
    const tools = {};
    for (const definition of task.tools) {
      if (definition.type === 'function') tools[definition.name] = makeTool(definition, task, toolsUrl);
      else log(`hosted tool ${definition.type} has no SDK equivalent; not sent`);
    }
    const input = typeof task.input === 'string' ? { prompt: task.input } : { messages: task.input };
    const options = {
      model: openai.responses(task.model),
      system: task.instructions,
      ...input,
      tools,
      stopWhen: stepCountIs(task.max_rounds),
      providerOptions: { openai: await stateOptions(task) },
    };
    if (task.stream) {
      let streamError = null;
      const stream = streamText({ ...options, onError: ({ error }) => { streamError = error; } });
      for await (const part of stream.fullStream) {
        if (part.type === 'error') streamError = part.error;
      }
      if (streamError) throw streamError;
      result = resultOf(await stream.finishReason, await stream.text, (await stream.steps).length);
    } else {
      const outcome = await generateText(options);
      result = resultOf(outcome.finishReason, outcome.text, outcome.steps.length);
    }
  } catch (err) {
    log(`run error: ${err?.stack ?? err}`);
    result = failure(err);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}

await main();
