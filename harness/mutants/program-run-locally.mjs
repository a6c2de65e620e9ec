// loopcheck-mutant
// defect: runs a program item's JavaScript itself, with the registry's tools bound to the backend, before answering the program's calls, so every tool the program uses runs again outside the calls the model issued
// caught-by: effects/at-most-once
// cases: program/01-one-pause
// supports: previous_response_id,programmatic
import { impl, log, main, postJson } from '../node/loop.mjs';

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
const { makeTools, send } = impl;
let tools;

impl.makeTools = (...args) => (tools = makeTools(...args));

/** Runs a program as the hosted sandbox would: each tool an async function on the backend. */
async function runLocally(program) {
  const names = [...tools.registry.keys()];
  let n = 0;
  const functions = names.map((name) => async (args) => {
    const body = { call_id: `${program.call_id}_${++n}`, arguments: args, principal: tools.principal };
    return (await postJson(`${tools.url}/call/${name}`, body)).body?.result;
  });
  return new AsyncFunction(...names, program.code)(...functions);
}

impl.send = async (...args) => {
  const response = await send(...args);
  for (const item of response.output.filter((item) => item.type === 'program')) {
    log(`program ${item.call_id} run locally: ${JSON.stringify(await runLocally(item))}`);
  }
  return response;
};

await main();
