import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One tool call the fake model makes: an OpenClaw tool name and its arguments. */
export interface ScriptedToolCall {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/** How long OpenClaw took for one scripted tool call: from the model's answer to the next request. */
export interface ToolCallTiming {
  readonly label: string;
  readonly index: number;
  readonly tool: string;
  readonly ms: number;
}

/** An OpenAI-compatible chat completions endpoint on 127.0.0.1 that follows scripts in the user's message. */
export interface FakeModel {
  /** The value for `models.providers.<name>.baseUrl`. */
  readonly baseUrl: string;
  readonly modelId: string;
  /** How many completions were asked for. */
  requests(): number;
  /** The tool calls made so far with their durations, in the order they finished. */
  timings(): readonly ToolCallTiming[];
  close(): Promise<void>;
}

const INSTRUCTION = /RUN:([A-Za-z0-9+/=]+)/;
const OPENCLAW_CONTEXT = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';
/** What separates the tool results in the model's final answer. */
export const RESULT_SEPARATOR = '\n==========\n';

/** `{media}` in a call's arguments: the path OpenClaw gave the agent for the message's attachment. */
export const MEDIA_PLACEHOLDER = '{media}';

/**
 * The text a Telegram user sends (or a document's caption) to make the fake model run `calls`,
 * one after another, then answer `RESULT <label>:` followed by every tool result, and then
 * `final` (a `MEDIA:` line, say) when given. `label` also names the timings.
 */
export function scriptedMessage(label: string, calls: readonly ScriptedToolCall[], options: { repeat?: number; final?: string } = {}): string {
  const script = { label, calls, repeat: options.repeat ?? 1, ...(options.final ? { final: options.final } : {}) };
  return `RUN:${Buffer.from(JSON.stringify(script)).toString('base64')}`;
}

/** A script as the user's message carries it; `{n}` in an argument is the call's number. */
interface Script {
  readonly label: string;
  readonly calls: readonly ScriptedToolCall[];
  readonly repeat: number;
  readonly final?: string;
}

/**
 * The attachment's path in OpenClaw's note on the user's turn:
 * `[media attached: media/inbound/openclaw-staged-<uuid>/input-<name> (<type>) "<name>"]`
 * (or `[media attached 1/2: …]`), relative to the sandbox's working folder.
 */
export function attachedMediaPath(text: string): string | undefined {
  return /\[media attached(?: \d+\/\d+)?: (.+?) \(/.exec(text)?.[1];
}

function readScript(encoded: string): Script | undefined {
  try {
    const script = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Partial<Script>;
    return typeof script.label === 'string' && Array.isArray(script.calls)
      ? { label: script.label, calls: script.calls, repeat: script.repeat ?? 1, ...(typeof script.final === 'string' ? { final: script.final } : {}) }
      : undefined;
  } catch {
    // A copy OpenClaw shortened (old history, a summary) is not the user's script.
    return undefined;
  }
}

function callAt(script: Script, index: number, media: string | undefined): ScriptedToolCall | undefined {
  if (index >= script.calls.length * script.repeat) return undefined;
  const call = script.calls[index % script.calls.length]!;
  let encoded = JSON.stringify(call.arguments).replaceAll('{n}', String(index));
  // Without an attachment the placeholder stays as it is: the command then fails visibly.
  if (media !== undefined) encoded = encoded.replaceAll(MEDIA_PLACEHOLDER, JSON.stringify(media).slice(1, -1));
  return { name: call.name, arguments: JSON.parse(encoded) as Record<string, unknown> };
}

function textOf(message: { content?: unknown }): string {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) return message.content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('');
  return '';
}

interface Decision {
  readonly tool?: ScriptedToolCall;
  readonly text?: string;
  readonly label?: string;
  readonly index?: number;
}

/**
 * Decides from the conversation alone (so concurrent sessions need no state): the newest user
 * message holding a script, and the tool results after it, say which call comes next.
 */
function decide(messages: ReadonlyArray<{ role?: string; content?: unknown }>, tools: readonly string[]): Decision {
  for (let at = messages.length - 1; at >= 0; at--) {
    const message = messages[at]!;
    if (message.role !== 'user') continue;
    const text = textOf(message);
    // OpenClaw appends context of its own as a user message, quoting earlier messages (scripts
    // included); only what the user sent counts.
    if (text.trimStart().startsWith(OPENCLAW_CONTEXT)) continue;
    const found = INSTRUCTION.exec(text);
    const script = found ? readScript(found[1]!) : undefined;
    if (!script) continue;
    const results = messages
      .slice(at + 1)
      .filter((later) => later.role === 'tool')
      .map(textOf);
    // OpenClaw's note is on the user's turn; should it come as a message of its own, the newest one counts.
    const media =
      attachedMediaPath(text) ??
      messages
        .map((candidate) => (candidate.role === 'user' ? attachedMediaPath(textOf(candidate)) : undefined))
        .filter((found) => found !== undefined)
        .at(-1);
    const next = callAt(script, results.length, media);
    // A request without the tool (a summary, a title) gets text: only the agent's turn calls tools.
    if (next && tools.includes(next.name)) return { tool: next, label: script.label, index: results.length };
    if (next) return { text: 'Summary: the user asked for scripted tool calls.' };
    const answer = `RESULT ${script.label}:\n${results.join(RESULT_SEPARATOR)}`;
    return { text: script.final ? `${answer}\n${script.final}` : answer, label: script.label, index: results.length };
  }
  return { text: 'There is nothing to do.' };
}

/** The `models` section of an OpenClaw config whose only provider is `model`. */
export function fakeModelProviders(model: FakeModel, options: { contextWindow: number }) {
  return {
    mode: 'replace',
    providers: {
      fake: {
        baseUrl: model.baseUrl,
        apiKey: 'berth-e2e-local',
        api: 'openai-completions',
        models: [
          {
            id: model.modelId,
            name: 'Berth e2e',
            reasoning: false,
            input: ['text'],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextWindow: options.contextWindow,
            maxTokens: 4096,
          },
        ],
      },
    },
  };
}

/** Starts the fake model (`api: "openai-completions"`, streamed or not). */
export async function startFakeModel(): Promise<FakeModel> {
  const modelId = 'berth-e2e-model';
  let requests = 0;
  let callCounter = 0;
  const started = new Map<string, { at: number; tool: string }>();
  const timings: ToolCallTiming[] = [];

  const server = http.createServer((request, response) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const pathname = new URL(request.url ?? '/', 'http://fake').pathname;
      if (request.method === 'GET' && pathname.endsWith('/models')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ object: 'list', data: [{ id: modelId, object: 'model', owned_by: 'berth-e2e' }] }));
        return;
      }
      if (!pathname.endsWith('/chat/completions')) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: `no such endpoint ${pathname}` } }));
        return;
      }
      requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        messages?: Array<{ role?: string; content?: unknown }>;
        tools?: Array<{ function?: { name?: string } }>;
        stream?: boolean;
      };
      const decision = decide(
        body.messages ?? [],
        (body.tools ?? []).map((tool) => tool.function?.name ?? ''),
      );
      if (process.env.BERTH_E2E_DUMP) (await import('node:fs')).writeFileSync(process.env.BERTH_E2E_DUMP, JSON.stringify(body.messages ?? [], null, 1));
      if (process.env.BERTH_E2E_VERBOSE) {
        const shown = {
          messages: body.messages?.length,
          tools: body.tools?.length ?? 0,
          label: decision.label,
          index: decision.index,
          tool: decision.tool?.name,
          text: decision.text?.slice(0, 40),
        };
        process.stderr.write(`[fake model] ${JSON.stringify(shown)}\n`);
      }
      if (decision.label !== undefined && decision.index !== undefined && decision.index > 0) {
        const key = `${decision.label}#${decision.index - 1}`;
        const start = started.get(key);
        if (start) {
          timings.push({ label: decision.label, index: decision.index - 1, tool: start.tool, ms: performance.now() - start.at });
          started.delete(key);
        }
      }
      const id = `chatcmpl-${++callCounter}`;
      const created = Math.floor(Date.now() / 1000);
      const toolCall = decision.tool
        ? { id: `call_${callCounter}`, type: 'function', function: { name: decision.tool.name, arguments: JSON.stringify(decision.tool.arguments) } }
        : undefined;
      const markStarted = (): void => {
        if (decision.tool && decision.label !== undefined)
          started.set(`${decision.label}#${decision.index}`, { at: performance.now(), tool: decision.tool.name });
      };
      if (body.stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const send = (payload: unknown): boolean => response.write(`data: ${JSON.stringify(payload)}\n\n`);
        const base = { id, object: 'chat.completion.chunk', created, model: modelId };
        if (toolCall) {
          send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, ...toolCall }] }, finish_reason: null }] });
          send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
        } else {
          send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: decision.text }, finish_reason: null }] });
          send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        }
        send({ ...base, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
        response.end('data: [DONE]\n\n', markStarted);
      } else {
        const message = toolCall ? { role: 'assistant', content: null, tool_calls: [toolCall] } : { role: 'assistant', content: decision.text };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: modelId,
            choices: [{ index: 0, message, finish_reason: toolCall ? 'tool_calls' : 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
          markStarted,
        );
      }
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    modelId,
    requests: () => requests,
    timings: () => [...timings],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
