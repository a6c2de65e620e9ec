// loopcheck contract adapter (docs/contract.md) for the Vercel AI SDK (`ai`) with its
// OpenAI provider on the Responses API (`@ai-sdk/openai`, `openai.responses(model)`). It
// maps the task onto `generateText` / `streamText` and their multi-step tool loop with the
// SDK's defaults: the adapter validates, retries and budgets nothing itself, so the verdicts
// judge the framework, not the adapter.
//
// The install step symlinks this file and its manifest into <dir>/ai-sdk/, beside its
// packages (ESM resolves them from the file's location), and runs it as:
//   node --preserve-symlinks --preserve-symlinks-main <dir>/ai-sdk/adapter.mjs

import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { log, postJson, runCall, serve, unsupported } from '../contract.mjs';

/** One SDK tool per task function tool: the task's description, raw JSON schema
 * (`jsonSchema`) and `strict`, whose body calls the fixture backend. A thrown error is how
 * an SDK tool reports a failure: the SDK sends it to the model as the call's tool-error
 * result. */
function makeTool(definition, task) {
  return tool({
    description: definition.description,
    inputSchema: jsonSchema(definition.parameters ?? { type: 'object', properties: {} }),
    ...(definition.strict === undefined ? {} : { strict: definition.strict }),
    // A deferred tool is hidden until a tool search loads it (the provider's option).
    ...(definition.defer_loading ? { providerOptions: { openai: { deferLoading: true } } } : {}),
    execute: (args, { toolCallId }) => runCall(task, definition.name, toolCallId, args),
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
    const answer = await postJson(`${process.env.OPENAI_BASE_URL.replace(/\/+$/, '')}/conversations`, {}, {
      Authorization: `Bearer ${process.env.OPENAI_API_KEY}`,
    });
    if (answer.status < 200 || answer.status > 299 || !answer.body?.id) throw new Error(`creating the conversation: HTTP ${answer.status}`);
    return { conversation: answer.body.id };
  }
  // previous_response_id: `previousResponseId` is one fixed option for every step of a
  // run, so the SDK cannot chain each step to the one before (the manifest omits this mode).
  throw unsupported(`state mode ${task.state} is not supported`);
}

/** The result line for how the SDK's run ended. */
function resultOf(finishReason, rawFinishReason, text, steps) {
  // The step limit stops the loop after a step that still asked for tools.
  if (finishReason === 'tool-calls') {
    return { status: 'failed', reason: 'max_rounds', detail: `stopped after ${steps} step(s) with tool calls pending` };
  }
  // The provider turns a refusal into text and the finish reason content-filter, the
  // reason it also gives a response left incomplete by the content filter; the raw finish
  // reason (the response's `incomplete_details.reason`) tells the two apart.
  if (finishReason === 'content-filter' && rawFinishReason === undefined && text) {
    return { status: 'failed', reason: 'refusal', detail: text };
  }
  if (finishReason === 'length' || finishReason === 'content-filter') {
    return { status: 'failed', reason: 'incomplete', detail: `finish reason ${finishReason} (${rawFinishReason})` };
  }
  if (finishReason === 'error') return { status: 'failed', reason: 'api_error', detail: 'finish reason error' };
  return { status: 'completed', output_text: text ?? '' };
}

function failure(_err, detail) {
  return { status: 'failed', reason: 'api_error', detail };
}

/** The hosted tools as the provider's documentation wires them (`openai.tools.*`): the
 * server runs them, the SDK only sends their definitions and replays their items. */
const HOSTED = {
  web_search: (openai) => openai.tools.webSearch({}),
  file_search: (openai, definition) => openai.tools.fileSearch({ vectorStoreIds: definition.vector_store_ids }),
  code_interpreter: (openai) => openai.tools.codeInterpreter({}),
  image_generation: (openai, definition) => openai.tools.imageGeneration({ size: definition.size }),
  mcp: (openai, definition) =>
    openai.tools.mcp({
      serverLabel: definition.server_label,
      serverUrl: definition.server_url,
      requireApproval: definition.require_approval,
    }),
  tool_search: (openai, definition) => openai.tools.toolSearch({ execution: definition.execution }),
};

async function runCase(task) {
  const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
  const tools = {};
  for (const definition of task.tools) {
    if (definition.type === 'function') tools[definition.name] = makeTool(definition, task);
    else if (HOSTED[definition.type]) tools[definition.type] = HOSTED[definition.type](openai, definition);
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
    return resultOf(await stream.finishReason, await stream.rawFinishReason, await stream.text, (await stream.steps).length);
  }
  const outcome = await generateText(options);
  return resultOf(outcome.finishReason, outcome.rawFinishReason, outcome.text, outcome.steps.length);
}

await serve(runCase, failure);
