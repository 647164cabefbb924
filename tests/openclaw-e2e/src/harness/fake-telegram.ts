import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A chat as Telegram describes it in an update. */
export type FakeChat =
  | { readonly id: number; readonly type: 'private'; readonly first_name: string }
  | { readonly id: number; readonly type: 'group' | 'supergroup'; readonly title: string };

/** One incoming message, as a Telegram user would send it. */
export interface IncomingMessage {
  readonly from: { readonly id: number; readonly first_name: string };
  readonly chat: FakeChat;
  readonly text: string;
}

/** A message the gateway sent with `sendMessage`, its text as the user would read it. */
export interface SentMessage {
  readonly chatId: string;
  readonly text: string;
  readonly at: number;
}

/** A Telegram Bot API on 127.0.0.1 serving one bot; what it received is kept for assertions. */
export interface FakeTelegram {
  /** The value for `channels.telegram.apiRoot`. */
  readonly apiRoot: string;
  readonly botToken: string;
  readonly botUsername: string;
  /** Queues messages as one batch of updates: the next `getUpdates` returns them together. */
  deliver(...messages: IncomingMessage[]): void;
  /** Every `sendMessage` the gateway made, oldest first. */
  sent(): readonly SentMessage[];
  /** Bot API methods the gateway called, with how often. */
  calls(): Readonly<Record<string, number>>;
  /** Resolves when a sent message matches; rejects after `timeoutMs` naming what was sent. */
  waitForMessage(match: (message: SentMessage) => boolean, timeoutMs: number, description: string): Promise<SentMessage>;
  close(): Promise<void>;
}

interface Update {
  readonly update_id: number;
  readonly message: Record<string, unknown>;
}

function decodeHtml(text: string): string {
  return text
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

async function readParameters(request: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  const query = Object.fromEntries(new URL(request.url ?? '/', 'http://fake').searchParams);
  if (!body) return query;
  const type = request.headers['content-type'] ?? '';
  if (type.includes('json')) return { ...query, ...(JSON.parse(body) as Record<string, unknown>) };
  if (type.includes('x-www-form-urlencoded')) return { ...query, ...Object.fromEntries(new URLSearchParams(body)) };
  return query;
}

/**
 * Starts the fake Bot API: `getMe`, long-polled `getUpdates`, `sendMessage` (recorded with its
 * HTML decoded, as the chat shows it), and a plain `true` for every other method the gateway
 * calls at start (`deleteWebhook`, `setMyCommands`, `sendChatAction`, …).
 */
export async function startFakeTelegram(options: { botId?: number } = {}): Promise<FakeTelegram> {
  const botId = options.botId ?? 7_000_000_001;
  const botToken = `${botId}:berth-e2e-bot-token`;
  const botUsername = 'berth_e2e_bot';
  const updates: Update[] = [];
  const sent: SentMessage[] = [];
  const calls: Record<string, number> = {};
  const waiting = new Set<() => void>();
  const watchers = new Set<() => void>();
  let nextUpdate = 1;
  // Message ids unique per run: the gateway drops a repeated (chat, message id) as a duplicate.
  let nextMessage = Date.now() % 1_000_000_000;

  const server = http.createServer((request, response) => {
    void (async () => {
      const match = /^\/bot([^/]+)\/(\w+)$/.exec(new URL(request.url ?? '/', 'http://fake').pathname);
      const reply = (result: unknown, status = 200): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(status === 200 ? { ok: true, result } : { ok: false, error_code: status, description: String(result) }));
      };
      if (!match) return reply('Not Found', 404);
      if (match[1] !== botToken) return reply('Unauthorized', 401);
      const method = match[2]!;
      const parameters = await readParameters(request);
      calls[method] = (calls[method] ?? 0) + 1;
      switch (method) {
        case 'getMe':
          return reply({
            id: botId,
            is_bot: true,
            first_name: 'Berth e2e',
            username: botUsername,
            can_join_groups: true,
            can_read_all_group_messages: true,
            supports_inline_queries: false,
          });
        case 'getUpdates': {
          const offset = Number(parameters.offset ?? 0);
          const pending = (): Update[] => updates.filter((update) => update.update_id >= offset);
          if (pending().length > 0) return reply(pending());
          // Long polling, capped so that a stopped gateway never holds the server for long.
          const timer = setTimeout(() => finish(), Math.min(Number(parameters.timeout ?? 0), 2) * 1000);
          const finish = (): void => {
            clearTimeout(timer);
            waiting.delete(finish);
            if (!response.writableEnded) reply(pending());
          };
          waiting.add(finish);
          request.once('close', () => waiting.delete(finish));
          return;
        }
        case 'sendMessage': {
          const chatId = String(parameters.chat_id);
          const text = String(parameters.text ?? '');
          sent.push({ chatId, text: parameters.parse_mode === 'HTML' ? decodeHtml(text) : text, at: Date.now() });
          for (const watcher of watchers) watcher();
          return reply({
            message_id: nextMessage++,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(chatId), type: Number(chatId) < 0 ? 'supergroup' : 'private' },
            text,
          });
        }
        case 'getMyCommands':
          return reply([]);
        case 'editMessageText':
          return reply({
            message_id: Number(parameters.message_id),
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(parameters.chat_id), type: 'private' },
            text: String(parameters.text ?? ''),
          });
        default:
          return reply(true);
      }
    })().catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    botToken,
    botUsername,
    deliver(...messages) {
      for (const message of messages) {
        updates.push({
          update_id: nextUpdate++,
          message: {
            message_id: nextMessage++,
            date: Math.floor(Date.now() / 1000),
            from: { ...message.from, is_bot: false },
            chat: message.chat,
            text: message.text,
          },
        });
      }
      for (const finish of [...waiting]) finish();
    },
    sent: () => [...sent],
    calls: () => ({ ...calls }),
    waitForMessage(match, timeoutMs, description) {
      const found = sent.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const hit = sent.find(match);
          if (!hit) return;
          clearTimeout(timer);
          watchers.delete(check);
          resolve(hit);
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(
            new Error(
              `no sendMessage ${description} within ${timeoutMs / 1000} s; the gateway sent: ${JSON.stringify(sent.map((message) => `${message.chatId}: ${message.text.slice(0, 120)}`))}`,
            ),
          );
        }, timeoutMs);
        watchers.add(check);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const finish of [...waiting]) finish();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
