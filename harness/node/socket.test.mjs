// The WebSocket mode of loop.mjs against a scripted socket server (the `ws` package's):
// how one answer's events are read, which failures are retried and on which connection.
// Run with `node --test harness/node/socket.test.mjs`.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import OpenAI from 'openai';
import { WebSocketServer } from 'ws';
import { ResponsesSocket, Stop } from './loop.mjs';

/** A socket server on a free port whose connections `serve` scripts, one call per
 * connection (its number, the server side, and a function that waits for the next create). */
async function server(serve) {
  const wss = new WebSocketServer({ port: 0, path: '/v1/responses' });
  await once(wss, 'listening');
  const connections = [];
  wss.on('connection', (socket, request) => {
    connections.push(request.headers.authorization);
    const queued = [];
    const waiting = [];
    socket.on('message', (data) => {
      const create = JSON.parse(String(data));
      const next = waiting.shift();
      if (next) next(create);
      else queued.push(create);
    });
    const nextCreate = () =>
      queued.length ? Promise.resolve(queued.shift()) : new Promise((resolve) => waiting.push(resolve));
    serve(connections.length, socket, nextCreate);
  });
  const base = `http://127.0.0.1:${wss.address().port}/v1`;
  const client = new OpenAI({ baseURL: base, apiKey: 'sk-test', maxRetries: 2 });
  return { wss, connections, socket: new ResponsesSocket(client) };
}

const send = (socket, event) => socket.send(JSON.stringify(event));

function answer(socket, id, output = []) {
  const response = { id, object: 'response', status: 'completed', output };
  send(socket, { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress' } });
  send(socket, { type: 'response.completed', sequence_number: 1, response });
}

const refusal = (status, headers = {}) => ({
  type: 'error',
  status,
  error: { type: 'server_error', code: null, message: `refused with ${status}`, param: null, headers },
});

test('the create is the body without stream and background, answered by its terminal event', async () => {
  const creates = [];
  const { wss, connections, socket } = await server(async (_n, ws, nextCreate) => {
    creates.push(await nextCreate());
    answer(ws, 'resp_1');
    creates.push(await nextCreate());
    answer(ws, 'resp_2');
  });
  const body = { model: 'gpt-5', input: 'hi', stream: true, background: false, store: false };
  assert.equal((await socket.create(body)).id, 'resp_1');
  assert.equal((await socket.create({ ...body, input: 'again' })).id, 'resp_2');
  await socket.close();
  assert.deepEqual(creates[0], { type: 'response.create', model: 'gpt-5', input: 'hi', store: false });
  assert.deepEqual(connections, ['Bearer sk-test'], 'one connection for both creates');
  wss.close();
});

test('a retryable error event is retried on the same connection, after its retry-after-ms', async () => {
  let creates = 0;
  const { wss, connections, socket } = await server(async (_n, ws, nextCreate) => {
    await nextCreate();
    creates++;
    send(ws, refusal(429, { 'retry-after-ms': '10' }));
    await nextCreate();
    creates++;
    answer(ws, 'resp_1');
  });
  const started = performance.now();
  assert.equal((await socket.create({ input: 'hi' })).id, 'resp_1');
  assert.ok(performance.now() - started < 300, 'retry-after-ms is honoured, not the backoff');
  await socket.close();
  assert.equal(creates, 2);
  assert.equal(connections.length, 1);
  wss.close();
});

test('x-should-retry: false wins, and a refusal that is not retried is the API error', async () => {
  let creates = 0;
  const { wss, socket } = await server(async (_n, ws, nextCreate) => {
    await nextCreate();
    creates++;
    send(ws, refusal(503, { 'x-should-retry': 'false' }));
  });
  await assert.rejects(socket.create({ input: 'hi' }), (err) => {
    assert.ok(err instanceof OpenAI.InternalServerError);
    assert.equal(err.status, 503);
    assert.match(err.message, /refused with 503/);
    return true;
  });
  await socket.close();
  assert.equal(creates, 1);
  wss.close();
});

test('retries end after two', async () => {
  let creates = 0;
  const { wss, socket } = await server(async (_n, ws, nextCreate) => {
    for (;;) {
      await nextCreate();
      creates++;
      send(ws, refusal(500, { 'retry-after-ms': '1' }));
    }
  });
  await assert.rejects(socket.create({ input: 'hi' }), OpenAI.InternalServerError);
  await socket.close();
  assert.equal(creates, 3);
  wss.close();
});

test('a connection the server closed after an answer is replaced before the next create', async () => {
  const { wss, connections, socket } = await server(async (n, ws, nextCreate) => {
    const create = await nextCreate();
    answer(ws, `resp_${n}`);
    if (n === 1) ws.close(1001, 'connection time limit reached');
    else assert.equal(create.previous_response_id, 'resp_1');
  });
  assert.equal((await socket.create({ input: 'hi' })).id, 'resp_1');
  await new Promise((resolve) => setTimeout(resolve, 50)); // the tools run; the close arrives
  assert.equal((await socket.create({ input: [], previous_response_id: 'resp_1' })).id, 'resp_2');
  await socket.close();
  assert.equal(connections.length, 2);
  wss.close();
});

test('a close that answers the create is retried on a new connection', async () => {
  let creates = 0;
  const { wss, connections, socket } = await server(async (n, ws, nextCreate) => {
    await nextCreate();
    creates++;
    if (n === 1) ws.close(1001, 'connection time limit reached');
    else answer(ws, 'resp_1');
  });
  assert.equal((await socket.create({ input: 'hi' })).id, 'resp_1');
  await socket.close();
  assert.equal(creates, 2);
  assert.equal(connections.length, 2);
  wss.close();
});

test('a connection dropped mid-answer fails the case, without a retry', async () => {
  let creates = 0;
  const { wss, connections, socket } = await server(async (_n, ws, nextCreate) => {
    await nextCreate();
    creates++;
    const response = { id: 'resp_1', object: 'response', status: 'in_progress', output: [] };
    send(ws, { type: 'response.created', sequence_number: 0, response });
    setTimeout(() => ws.terminate(), 20);
  });
  await assert.rejects(socket.create({ input: 'hi' }), (err) => err instanceof Stop || err instanceof OpenAI.OpenAIError);
  await socket.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(creates, 1);
  assert.equal(connections.length, 1);
  wss.close();
});

test('an error event once the answer started is a broken stream, not retried', async () => {
  let creates = 0;
  const { wss, socket } = await server(async (_n, ws, nextCreate) => {
    await nextCreate();
    creates++;
    const response = { id: 'resp_1', object: 'response', status: 'in_progress', output: [] };
    send(ws, { type: 'response.created', sequence_number: 0, response });
    send(ws, refusal(500));
  });
  await assert.rejects(socket.create({ input: 'hi' }), OpenAI.APIError);
  await socket.close();
  assert.equal(creates, 1);
  wss.close();
});

test('calls are read from the terminal event only', async () => {
  const call = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{}', status: 'completed' };
  const { wss, socket } = await server(async (_n, ws, nextCreate) => {
    await nextCreate();
    const response = { id: 'resp_1', object: 'response', status: 'in_progress', output: [] };
    send(ws, { type: 'response.created', sequence_number: 0, response });
    send(ws, { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...call, status: 'in_progress', arguments: '' } });
    send(ws, { type: 'response.output_item.done', sequence_number: 2, output_index: 0, item: call });
    send(ws, { type: 'response.incomplete', sequence_number: 3, response: { ...response, status: 'incomplete', output: [] } });
  });
  const response = await socket.create({ input: 'hi' });
  assert.equal(response.status, 'incomplete');
  assert.deepEqual(response.output, []);
  await socket.close();
  wss.close();
});

test('a refused upgrade fails as its HTTP answer', async () => {
  const { createServer } = await import('node:http');
  const http = createServer();
  http.on('upgrade', (_request, tcp) => {
    const body = JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key', param: null } });
    tcp.end(`HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  });
  http.listen(0);
  await once(http, 'listening');
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${http.address().port}/v1`, apiKey: 'sk-bad' });
  const socket = new ResponsesSocket(client);
  await assert.rejects(socket.create({ input: 'hi' }), (err) => {
    assert.ok(err instanceof OpenAI.AuthenticationError);
    assert.match(err.message, /Incorrect API key provided/);
    return true;
  });
  await socket.close();
  http.close();
});
