// loopcheck contract adapter (docs/contract.md) for LangChain.js: `createAgent` from
// `langchain` on `ChatOpenAI` from `@langchain/openai` with `useResponsesApi: true`. The
// agent graph (LangGraph) decides what to send, which calls to run and when to stop; the
// adapter validates, retries and budgets nothing itself, so the verdicts judge the framework,
// not the adapter. The only settings it passes are the ones the task dictates:
//
// - the model, the fake API's URL (`configuration.baseURL`) and key (`apiKey`);
// - the `stateless` mode: `zdrEnabled: true`, the model's documented switch for
//   `store: false` (LangChain replays the whole history by default);
// - `streaming: true` when the task streams, and the agent's `stream` then;
// - the turn limit: LangGraph's `recursionLimit`, in graph steps (see `recursionLimit`).
//
// Each task function tool is one `tool()` whose schema is the task's raw JSON schema; its
// body asks the approver first for an approval-required tool and posts the call to the
// fixture backend under the call id LangChain hands the tool in its config (`toolCall.id`).
//
// The install step symlinks this file and its manifest into <dir>/langchain-js/, beside its
// packages (ESM resolves them from the file's location), and runs it as:
//   node --preserve-symlinks --preserve-symlinks-main <dir>/langchain-js/adapter.mjs

import { GraphRecursionError } from '@langchain/langgraph';
import { ChatOpenAI, tools as openaiTools } from '@langchain/openai';
import { createAgent, HumanMessage, tool } from 'langchain';
import { log, runCall, serve, unsupported } from '../contract.mjs';

/** One LangChain tool per task function tool: name, description and raw JSON schema. A
 * thrown error is how a LangChain tool reports a failure: the agent's ToolNode turns it into
 * the call's error ToolMessage by default. */
function makeTool(definition, task) {
  return tool(
    (args, config) => runCall(task, definition.name, config?.toolCall?.id, args),
    {
      name: definition.name,
      description: definition.description ?? '',
      schema: definition.parameters ?? { type: 'object', properties: {} },
      // A deferred tool is hidden until a tool search loads it; ChatOpenAI passes
      // `extras.defer_loading` through to the definition.
      ...(definition.defer_loading ? { extras: { defer_loading: true } } : {}),
    },
  );
}

/** The hosted tools as @langchain/openai documents them (`tools.*`): the server runs them,
 * the agent only sends their definitions and replays their items. */
const HOSTED = {
  web_search: () => openaiTools.webSearch(),
  file_search: (definition) => openaiTools.fileSearch({ vectorStoreIds: definition.vector_store_ids }),
  code_interpreter: (definition) => openaiTools.codeInterpreter({ container: definition.container }),
  image_generation: (definition) => openaiTools.imageGeneration({ size: definition.size }),
  mcp: (definition) =>
    openaiTools.mcp({
      serverLabel: definition.server_label,
      serverUrl: definition.server_url,
      requireApproval: definition.require_approval,
    }),
  tool_search: (definition) => openaiTools.toolSearch({ execution: definition.execution }),
};

/** LangGraph counts graph steps, not model requests: a round of `createAgent` is a model
 * step then a tools step, so N model requests take 2N - 1 steps, and the graph stops with
 * GraphRecursionError before the tools step that would follow the last one. */
function recursionLimit(maxRounds) {
  return 2 * maxRounds - 1;
}

function failure(err, detail) {
  if (err instanceof GraphRecursionError) return { status: 'failed', reason: 'max_rounds', detail };
  return { status: 'failed', reason: 'api_error', detail };
}

async function runCase(task) {
  // previous_response_id: ChatOpenAI chains only from a `previous_response_id` call option
  // given for one call, and the agent calls the model with the same options every step;
  // conversation: the agent resends the whole history, which may not go beside one.
  if (task.state !== 'stateless') throw unsupported(`state mode ${task.state} is not supported`);
  const model = new ChatOpenAI({
    model: task.model,
    apiKey: process.env.OPENAI_API_KEY,
    configuration: { baseURL: process.env.OPENAI_BASE_URL },
    useResponsesApi: true,
    zdrEnabled: true,
    ...(task.stream ? { streaming: true } : {}),
  });
  const tools = [];
  for (const definition of task.tools) {
    if (definition.type === 'function') tools.push(makeTool(definition, task));
    else if (HOSTED[definition.type]) tools.push(HOSTED[definition.type](definition));
    else log(`hosted tool ${definition.type} has no LangChain equivalent here; not sent`);
  }
  const agent = createAgent({ model, tools, ...(task.instructions ? { systemPrompt: task.instructions } : {}) });
  // A string input is the user's message; a list of role/content items LangChain converts.
  const messages = typeof task.input === 'string' ? [new HumanMessage(task.input)] : task.input;
  const config = { recursionLimit: recursionLimit(task.max_rounds) };
  let state;
  if (task.stream) {
    // The agent's stream of state values; the last one is the final state.
    for await (const value of await agent.stream({ messages }, { ...config, streamMode: 'values' })) state = value;
  } else {
    state = await agent.invoke({ messages }, config);
  }
  const last = state.messages.at(-1);
  log(`final message: ${JSON.stringify(last)}`);
  // `.text` joins the final AIMessage's text blocks.
  return { status: 'completed', output_text: last?.text ?? '' };
}

await serve(runCase, failure);
