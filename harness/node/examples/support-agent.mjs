// A small Responses API tool loop, as an application might have one: the model asks for
// tools, the agent runs them and sends back their outputs, until the model answers or the
// round budget runs out. State is carried with previous_response_id.

/** The loop's end, in the shape loopcheck judges (docs/contract.md, section 6). */
const completed = (text) => ({ status: 'completed', output_text: text });
const failed = (reason, detail) => ({ status: 'failed', reason, detail });

const errorOutput = (message) => JSON.stringify({ error: message });

export class SupportAgent {
  /**
   * `client`: an OpenAI client. `tools`: the function tool definitions offered to the
   * model, also the only tools the agent runs. `callTool(name, args, callId)`: runs one
   * tool and resolves with `{ ok: true, result }` or `{ ok: false, error }`.
   */
  constructor({ client, model, instructions, tools, maxRounds, callTool }) {
    this.client = client;
    this.model = model;
    this.instructions = instructions;
    this.tools = tools;
    this.maxRounds = maxRounds;
    this.callTool = callTool;
    this.known = new Set(tools.filter((tool) => tool.type === 'function').map((tool) => tool.name));
  }

  async run(input) {
    let previousResponseId;
    for (let round = 1; round <= this.maxRounds; round++) {
      const response = await this.client.responses.create({
        model: this.model,
        instructions: this.instructions,
        tools: this.tools,
        input,
        previous_response_id: previousResponseId,
      });
      if (response.status === 'incomplete') {
        return failed('incomplete', response.incomplete_details?.reason ?? 'the response is incomplete');
      }
      if (response.status !== 'completed') {
        return failed('response_failed', response.error?.message ?? `status ${response.status}`);
      }
      const calls = response.output.filter((item) => item.type === 'function_call');
      if (calls.length === 0) {
        const refusal = response.output
          .flatMap((item) => (item.type === 'message' ? item.content : []))
          .find((part) => part.type === 'refusal');
        return refusal ? failed('refusal', refusal.refusal) : completed(response.output_text);
      }
      // Outputs of the last round could never be sent back: run nothing.
      if (round === this.maxRounds) break;
      input = [];
      for (const call of calls) input.push(this.outputFor(call, await this.answer(call)));
      previousResponseId = response.id;
    }
    return failed('max_rounds', `no answer within ${this.maxRounds} rounds`);
  }

  /** The output text for one call; a call the agent cannot run gets an error the model
   * can read, so the conversation goes on. */
  async answer(call) {
    if (!this.known.has(call.name)) return errorOutput(`unknown tool: ${call.name}`);
    let args;
    try {
      args = JSON.parse(call.arguments);
    } catch (err) {
      return errorOutput(`invalid JSON arguments: ${err.message}`);
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return errorOutput('invalid arguments: expected a JSON object');
    }
    const outcome = await this.callTool(call.name, args, call.call_id);
    return outcome.ok ? JSON.stringify(outcome.result) : errorOutput(outcome.error);
  }

  outputFor(call, output) {
    return { type: 'function_call_output', call_id: call.call_id, output };
  }
}
