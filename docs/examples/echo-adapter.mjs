#!/usr/bin/env node
// echo-adapter.mjs: a minimal implementation of the relavium-conformance stdio protocol in Node.js.
//
// It is the worked example of docs/adapters.md. It has no dependencies (Node 20 or later) and contains
// its own tiny "engine": a session that starts, runs plain text turns against the kit's scripted
// provider, can be aborted and cancelled, and refuses what its state does not allow. It declares only
// the capability `core`, runs no tools and asks for no approvals, so most cases fail: the point is to
// show the protocol end to end and a report read clause by clause.
//
//   relavium-conformance run --adapter "stdio:node docs/examples/echo-adapter.mjs" --validate-protocol
//
// stdout carries the protocol and nothing else; diagnostics go to stderr (the kit keeps its last lines).

import { createInterface } from "node:readline";

const PROTOCOL_VERSION = "1.1";

// Error codes of the kit's protocol (docs/protocol.md, "Errors").
const SESSION_STATE = -32001; // data: {kind: "session_state", code: "not_started" | "already_started" | ...}
const INVALID_INPUT = -32002; // data: {kind: "invalid_input", message}
const UNSUPPORTED = -32003; // data: {kind: "unsupported"}
const METHOD_NOT_FOUND = -32601;
const INTERNAL_ERROR = -32603;

function log(...parts) {
  console.error("[echo-adapter]", ...parts);
}

// ---------------------------------------------------------------------------------------------------
// Step 2 of the guide: the transport. One JSON object per line, both directions, requests both ways.

function write(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

let nextId = 1;
const waiting = new Map(); // id of a request we sent -> {resolve, reject}

// Call the kit (provider.open, provider.next, host.emit, ...) and wait for its answer.
function callKit(method, params) {
  const id = nextId++;
  write({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });

lines.on("line", (line) => {
  if (line.trim() === "") return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    log("ignoring a line that is not JSON:", line.slice(0, 200));
    return;
  }
  // Operations issued together arrive as one batch: a JSON array on one line (KD-KIT-1). Dispatch every
  // request of it before awaiting anything, so an abort and a cancel are both marked before the turn moves.
  for (const item of Array.isArray(message) ? message : [message]) receive(item);
});

function receive(message) {
  if (typeof message.method === "string") {
    // A request or notification from the kit. Do not await it: while one operation (a send) is in
    // flight, the kit sends further requests (abort, cancel) and answers our own calls.
    serve(message);
    return;
  }
  const entry = waiting.get(message.id);
  if (entry === undefined) return; // an answer we stopped waiting for (for example an interrupted pull)
  waiting.delete(message.id);
  if (message.error !== undefined) {
    entry.reject(new RpcError(message.error.code, message.error.message, message.error.data));
  } else {
    entry.resolve(message.result);
  }
}

// When the kit closes our stdin, nothing keeps the event loop alive and the process exits.

async function serve({ id, method, params }) {
  if (id === undefined) {
    // A notification. The only one the kit sends is `bye`: stop reading, and exit once idle.
    if (method === "bye") lines.close();
    return;
  }
  try {
    const result = await dispatch(method, params ?? {});
    write({ jsonrpc: "2.0", id, result });
  } catch (error) {
    if (error instanceof RpcError) {
      const body = { code: error.code, message: error.message };
      if (error.data !== undefined) body.data = error.data;
      write({ jsonrpc: "2.0", id, error: body });
    } else {
      log(`${method} failed:`, error?.stack ?? error);
      write({ jsonrpc: "2.0", id, error: { code: INTERNAL_ERROR, message: `${method} failed` } });
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Steps 3 to 5: the handshake and the operations.

async function dispatch(method, params) {
  switch (method) {
    case "hello":
      return {
        protocolVersion: PROTOCOL_VERSION,
        implementation: {
          name: "echo-adapter",
          version: "0.1.0",
          language: `javascript (node ${process.versions.node})`,
        },
        capabilities: ["core"],
      };
    case "session.create":
      return create(params);
    case "session.start":
      await session(params).start();
      return {};
    case "session.send":
      if (typeof params.text !== "string") throw invalid("text must be a string");
      return session(params).send(params.text);
    case "session.abort":
      session(params).abort();
      return {};
    case "session.cancel":
      await session(params).cancel();
      return {};
    case "session.setTurnPolicy":
      session(params).policy = params.policy ?? null; // kept, but this example runs no tools
      return {};
    case "session.runUserCommand":
      throw new RpcError(UNSUPPORTED, "runUserCommand is not implemented", { kind: "unsupported" });
    default:
      throw new RpcError(METHOD_NOT_FOUND, `method not found: ${method}`);
  }
}

function refuse(code, message) {
  return new RpcError(SESSION_STATE, message, { kind: "session_state", code });
}

function invalid(message) {
  return new RpcError(INVALID_INPUT, message, { kind: "invalid_input", message });
}

const sessions = new Map(); // the kit's handle -> Session
let created = 0;

function create(params) {
  if (typeof params.handle !== "string" || typeof params.agent !== "object" || params.agent === null) {
    throw invalid("session.create needs a handle and an agent");
  }
  const s = new Session(params);
  sessions.set(params.handle, s);
  return { sessionId: s.id };
}

function session(params) {
  const s = sessions.get(params.handle);
  if (s === undefined) throw invalid("unknown session handle");
  return s;
}

// The "engine". States: created -> idle <-> streaming, and any state -> cancelled (docs/lifecycle.md).

const INTERRUPTED = Symbol("interrupted");

class Session {
  constructor({ handle, agent, context, tools = [], sessionId }) {
    this.handle = handle;
    this.agent = agent;
    this.context = context;
    // The tools the kit plays, narrowed to the ones the agent declares (definitions go to the provider).
    this.tools = tools
      .filter((tool) => (agent.tools ?? []).includes(tool.name))
      .map((tool) => ({
        name: tool.name,
        ...(tool.description != null ? { description: tool.description } : {}),
        parameters: tool.parameters ?? { type: "object" },
      }));
    this.id = sessionId ?? `echo-session-${++created}`;
    this.state = "created";
    this.sequence = 0;
    this.history = []; // completed exchanges only: an aborted turn leaves nothing behind
    this.turn = null;
  }

  // Events are stamped at once (so their order is fixed) and acknowledged by the kit; while we wait
  // for an acknowledgement, the kit may call abort or cancel (KD-EVT-3): nothing here blocks that.
  emit(type, fields = {}) {
    const event = {
      sessionId: this.id,
      sequenceNumber: this.sequence++,
      timestamp: new Date().toISOString(),
      type,
      ...fields,
    };
    return callKit("host.emit", { handle: this.handle, event });
  }

  async start() {
    if (this.state === "cancelled") throw refuse("not_active", "the session was cancelled");
    if (this.state !== "created") throw refuse("already_started", "the session is already started");
    this.state = "idle";
    await this.emit("session:started", {
      agentRef: this.agent.id,
      model: this.agent.model,
      context: this.context,
    });
  }

  abort() {
    // Only a turn in flight is aborted; otherwise abort does nothing at all.
    if (this.turn !== null && !this.turn.aborted) {
      this.turn.aborted = true;
      this.turn.interrupt();
    }
  }

  async cancel() {
    if (this.state === "cancelled") return; // idempotent: no second session:cancelled
    this.state = "cancelled";
    if (this.turn !== null) {
      this.turn.cancelled = true; // a cancel wins over an abort: the turn gets no terminal event
      this.turn.interrupt();
    }
    await this.emit("session:cancelled");
  }

  // Wait for a provider call unless the turn is interrupted first. An interrupted pull is simply
  // abandoned: the kit may never answer it, and the turn must not wait for it. (Event
  // acknowledgements, by contrast, are always awaited: the kit answers every host.emit.)
  until(turn, promise) {
    return Promise.race([promise, turn.interrupted.then(() => INTERRUPTED)]);
  }

  async send(text) {
    if (this.state === "created") throw refuse("not_started", "the session was never started");
    if (this.state === "cancelled") throw refuse("not_active", "the session was cancelled");
    if (this.state !== "idle") throw refuse("busy", "a turn is in flight");
    this.state = "streaming";
    const turn = { aborted: false, cancelled: false };
    turn.interrupted = new Promise((resolve) => (turn.interrupt = resolve));
    this.turn = turn;
    try {
      return await this.runTurn(turn, text);
    } finally {
      this.turn = null;
      if (this.state === "streaming") this.state = "idle";
    }
  }

  async runTurn(turn, text) {
    const model = this.agent.model;
    const user = { role: "user", content: [{ type: "text", text }] };
    const tokensUsed = { input: 0, output: 0, model };
    let reply = "";
    let ending = null; // the stop or error chunk, when the stream finished

    await this.emit("session:turn_started"); // an abort or cancel may arrive while the kit holds it
    if (!turn.aborted && !turn.cancelled) {
      // The provider is the kit's: open a stream with the request, then pull chunk after chunk.
      const request = { model, system: this.agent.system_prompt, messages: [...this.history, user] };
      if (this.tools.length > 0) request.tools = this.tools;
      const opened = await this.until(
        turn,
        callKit("provider.open", { handle: this.handle, provider: this.agent.provider, model, request }),
      );
      while (opened !== INTERRUPTED && ending === null) {
        const answer = await this.until(turn, callKit("provider.next", { handle: this.handle, stream: opened.stream }));
        if (answer === INTERRUPTED) break;
        const chunk = answer.chunk;
        if (chunk.type === "text_delta") {
          reply += chunk.text;
          await this.emit("agent:token", { nodeId: this.agent.id, token: chunk.text, model });
        } else if (chunk.type === "stop" || chunk.type === "error") {
          ending = chunk;
        } // reasoning and tool-call chunks are beyond this example: ignored
        if (turn.aborted || turn.cancelled) break;
      }
    }

    if (turn.cancelled) {
      // session:cancelled was emitted by cancel(); a cancelled turn has no terminal event.
      return { status: "cancelled", tokensUsed };
    }
    if (turn.aborted) {
      await this.emit("session:turn_completed", { stopReason: "aborted", tokensUsed });
      return { status: "aborted", stopReason: "aborted", tokensUsed };
    }
    if (ending.type === "error") {
      const error = { code: "internal", message: "the provider failed", retryable: false };
      await this.emit("session:turn_completed", { stopReason: "error", tokensUsed, error });
      return { status: "failed", stopReason: "error", tokensUsed, error };
    }
    const usage = ending.usage ?? { inputTokens: 0, outputTokens: 0 };
    tokensUsed.input = usage.inputTokens;
    tokensUsed.output = usage.outputTokens;
    await this.emit("cost:updated", {
      nodeId: this.agent.id,
      model,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costMicrocents: 0,
      cumulativeCostMicrocents: 0,
      attemptNumber: 1,
      priced: false,
    });
    if (turn.cancelled) return { status: "cancelled", tokensUsed }; // cancelled while the kit held that event
    this.history.push(user, { role: "assistant", content: [{ type: "text", text: reply }] });
    await this.emit("session:turn_completed", { stopReason: ending.stopReason, tokensUsed });
    return { status: "completed", stopReason: ending.stopReason, text: reply, tokensUsed };
  }
}
