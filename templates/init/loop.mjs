// A starter tool loop for loopcheck, on the official `openai` npm package.
//
// Its manifest declares `persistent`, so loopcheck starts it once per job and writes one
// JSON line per case to its standard input (the task and that case's OPENAI_BASE_URL,
// OPENAI_API_KEY and LOOPCHECK_TOOLS_URL); it answers each with one JSON result line.
// Run with $LOOPCHECK_TASK set (a manifest without `persistent`), it runs that one case.
// Start here, run `loopcheck run`, and fix what the report says: the contract is in
// loopcheck's docs/contract.md.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';

class Stop extends Error {
  constructor(reason, detail) {
    super(detail);
    this.reason = reason;
  }
}

const errorOutput = (message) => JSON.stringify({ error: message });

// Validates a call against the task's registry, runs it on the tool backend, and returns
// the output to send back. Never throws: a bad call gets an error output.
async function runTool(task, call) {
  const tool = task.tools.find((t) => t.type === 'function' && t.name === call.name);
  if (!tool) return errorOutput(`unknown tool: ${call.name}`);
  let args;
  try {
    args = JSON.parse(call.arguments);
  } catch (err) {
    return errorOutput(`arguments are not valid JSON: ${err.message}`);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return errorOutput('arguments must be a JSON object');
  }
  // TODO: validate `args` against tool.parameters (e.g. with ajv) before anything runs;
  // ask for approvals (POST /approvals) for the tools in task.approval_required.
  const url = `${process.env.LOOPCHECK_TOOLS_URL.replace(/\/$/, '')}/call/${call.name}`;
  const body = { call_id: call.call_id, arguments: args, principal: task.principal };
  try {
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const parsed = await answer.json().catch(() => null);
    if (answer.status === 200 && parsed && 'result' in parsed) return JSON.stringify(parsed.result);
    return errorOutput(parsed?.error?.message ?? `the tool failed with HTTP ${answer.status}`);
  } catch (err) {
    return errorOutput(`the tool backend is unreachable: ${err.message}`);
  }
}

async function run(task) {
  const client = new OpenAI();
  const config = { model: task.model, tools: task.tools };
  if (task.instructions) config.instructions = task.instructions;
  if (task.state === 'stateless') {
    Object.assign(config, { store: false, include: ['reasoning.encrypted_content'] });
  } else if (task.state !== 'previous_response_id') {
    throw new Stop('unsupported', `state mode ${task.state} is not supported yet`);
  }
  let sent = typeof task.input === 'string' ? [{ role: 'user', content: task.input }] : [...task.input];
  let previous;
  for (let round = 1; round <= task.max_rounds; round++) {
    const request = { ...config, input: sent };
    if (previous) request.previous_response_id = previous;
    const response = await client.responses.create(request);
    if (response.status === 'incomplete') throw new Stop('incomplete', 'the response was cut short');
    if (response.status !== 'completed') throw new Stop('response_failed', `the response ended ${response.status}`);
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return response.output_text;
    if (round === task.max_rounds) throw new Stop('max_rounds', 'the model kept calling tools');
    const outputs = [];
    for (const call of calls) {
      outputs.push({ type: 'function_call_output', call_id: call.call_id, output: await runTool(task, call) });
    }
    if (task.state === 'stateless') {
      // Replay every output item as it came (output-only fields dropped).
      const replay = response.output.map((item) => {
        if (item.type !== 'reasoning') return item;
        const { status: _status, ...rest } = item;
        return rest;
      });
      sent = [...sent, ...replay, ...outputs];
    } else {
      sent = outputs;
      previous = response.id;
    }
  }
  throw new Stop('max_rounds', 'no round left');
}

// Runs one case; its result object. Never throws: every failure is a result.
async function runCase(task) {
  try {
    return { status: 'completed', output_text: await run(task) };
  } catch (err) {
    return err instanceof Stop
      ? { status: 'failed', reason: err.reason, detail: err.message }
      : { status: 'failed', reason: 'api_error', detail: `${err.name}: ${err.message}` };
  }
}

if (process.env.LOOPCHECK_TASK) {
  let task;
  try {
    task = JSON.parse(readFileSync(process.env.LOOPCHECK_TASK, 'utf8'));
  } catch (err) {
    console.log(JSON.stringify({ status: 'failed', reason: 'api_error', detail: `the task: ${err.message}` }));
    process.exit(0);
  }
  console.log(JSON.stringify(await runCase(task)));
} else {
  // Persistent mode: one case per line, this case's URLs and key in its `env`. Standard
  // output carries only result lines: log to standard error.
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const request = JSON.parse(line);
    Object.assign(process.env, request.env);
    console.log(JSON.stringify(await runCase(request.task)));
  }
}
