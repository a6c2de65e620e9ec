// loopcheck contract adapter (docs/contract.md) for the OpenAI Agents SDK for TypeScript
// (@openai/agents). It maps the task onto an Agent and the SDK's own `run` loop with the
// SDK's defaults: the adapter validates, retries and budgets nothing itself, so the verdicts
// judge the framework, not the adapter.
//
// The install step symlinks this file and its manifest into <dir>/openai-agents-js/, beside its
// packages (ESM resolves them from the file's location), and runs it as:
//   node --preserve-symlinks --preserve-symlinks-main <dir>/openai-agents-js/adapter.mjs

import OpenAI from 'openai';
import {
  Agent,
  codeInterpreterTool,
  fileSearchTool,
  hostedMcpTool,
  imageGenerationTool,
  MaxTurnsExceededError,
  ModelRefusalError,
  programmaticToolCallingTool,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
  tool,
  toolSearchTool,
  webSearchTool,
} from '@openai/agents';
import { log, runCall, serve, unsupported } from '../contract.mjs';

/** One SDK function tool per task tool: the task's name, description, JSON schema and
 * `strict` (left unset when the task leaves it unset: the SDK then defaults to true, as the
 * API does), whose body calls the fixture backend. */
function makeTool(definition, task) {
  return tool({
    name: definition.name,
    description: definition.description ?? '',
    parameters: definition.parameters ?? { type: 'object', properties: {} },
    ...(definition.strict === undefined ? {} : { strict: definition.strict }),
    ...(definition.allowed_callers ? { allowedCallers: definition.allowed_callers } : {}),
    ...(definition.output_schema ? { outputSchema: definition.output_schema } : {}),
    ...(definition.defer_loading ? { deferLoading: true } : {}),
    // The SDK hands the model's function_call item to the tool body. A thrown error is how
    // an SDK tool reports a failure: the SDK's errorFunction turns it into the call's output.
    execute: (args, _runContext, details) => runCall(task, definition.name, details?.toolCall?.callId, args),
  });
}

/** The hosted tools as the SDK's documentation wires them: the server runs them, the runner
 * only sends their definitions and replays their items. */
const HOSTED = {
  web_search: () => webSearchTool(),
  file_search: (definition) => fileSearchTool(definition.vector_store_ids),
  code_interpreter: (definition) => codeInterpreterTool({ container: definition.container }),
  image_generation: (definition) => imageGenerationTool({ size: definition.size }),
  mcp: (definition) =>
    hostedMcpTool({
      serverLabel: definition.server_label,
      serverUrl: definition.server_url,
      requireApproval: definition.require_approval,
    }),
  tool_search: (definition) => toolSearchTool({ execution: definition.execution }),
};

/** The SDK's tools for the task: function tools, plus the hosted tools the SDK offers. */
function makeTools(task) {
  const tools = [];
  for (const definition of task.tools) {
    if (definition.type === 'function') tools.push(makeTool(definition, task));
    else if (definition.type === 'programmatic_tool_calling') tools.push(programmaticToolCallingTool());
    else if (HOSTED[definition.type]) tools.push(HOSTED[definition.type](definition));
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
  throw unsupported(`state mode ${task.state} is not supported`);
}

/** The failure result for an error the SDK raised. */
function failure(err, detail) {
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

async function runCase(task) {
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
    tools: makeTools(task),
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
  return { status: 'completed', output_text: typeof text === 'string' ? text : text == null ? '' : JSON.stringify(text) };
}

await serve(runCase, failure);
