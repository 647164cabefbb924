import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/** A chat as Telegram describes it in an update. */
export type FakeChat =
  | { readonly id: number; readonly type: 'private'; readonly first_name: string }
  | { readonly id: number; readonly type: 'group' | 'supergroup'; readonly title: string };

/** A file a user attaches: served by `getFile` and `/file/bot<token>/<file_path>`. */
export interface IncomingDocument {
  readonly fileName: string;
  readonly mimeType: string;
  readonly bytes: Buffer;
}

/** One incoming message, as a Telegram user would send it. */
export interface IncomingMessage {
  readonly from: { readonly id: number; readonly first_name: string };
  readonly chat: FakeChat;
  /** The message's text, or a document's caption. */
  readonly text: string;
  /** A document sent with `text` as its caption. */
  readonly document?: IncomingDocument;
}

/** A file the gateway sent (`sendDocument`, `sendPhoto`, …), parsed from grammy's multipart body. */
export interface SentFile {
  readonly method: string;
  /** The multipart field the file was attached to (`document`, `photo`, …). */
  readonly field: string;
  readonly fileName: string;
  readonly bytes: Buffer;
}

/** A message the gateway sent with `sendMessage` (or a file's caption), its text as the user would read it. */
export interface SentMessage {
  readonly chatId: string;
  readonly text: string;
  readonly at: number;
  /** The file, when the message was a `sendDocument` and the like. */
  readonly file?: SentFile;
}

/** A Telegram Bot API on 127.0.0.1 serving one bot; what it received is kept for assertions. */
export interface FakeTelegram {
  /** The value for `channels.telegram.apiRoot`. */
  readonly apiRoot: string;
  readonly botToken: string;
  readonly botUsername: string;
  /** Queues messages as one batch of updates: the next `getUpdates` returns them together. */
  deliver(...messages: IncomingMessage[]): void;
  /** Every `sendMessage` (and file, with its caption) the gateway sent, oldest first. */
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

interface MultipartPart {
  readonly name: string;
  readonly fileName?: string;
  readonly bytes: Buffer;
}

/**
 * Parses a multipart/form-data body as grammy writes it (core/payload.js): `--boundary` lines,
 * lowercase headers, `content-disposition:form-data;name="…";filename=…` with the file name
 * unquoted, the bytes exact.
 */
export function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!boundary) throw new Error(`a multipart body without a boundary: ${contentType}`);
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]!.trim()}`);
  const parts: MultipartPart[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    // The part sits between the CRLF after the delimiter and the CRLF before the next one.
    const part = body.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const disposition = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(headers)?.[1] ?? '';
    const name = /name="([^"]*)"/i.exec(disposition)?.[1] ?? '';
    const fileName = /filename=(?:"([^"]*)"|([^;\r\n]*))/i.exec(disposition);
    parts.push({ name, ...(fileName ? { fileName: fileName[1] ?? fileName[2]!.trim() } : {}), bytes: part.subarray(headerEnd + 4) });
    at = next;
  }
  return parts;
}

interface Parameters {
  readonly fields: Record<string, unknown>;
  readonly parts: readonly MultipartPart[];
}

async function readParameters(request: http.IncomingMessage): Promise<Parameters> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const body = raw.toString('utf8');
  const query = Object.fromEntries(new URL(request.url ?? '/', 'http://fake').searchParams);
  if (!body) return { fields: query, parts: [] };
  const type = request.headers['content-type'] ?? '';
  if (type.includes('json')) return { fields: { ...query, ...(JSON.parse(body) as Record<string, unknown>) }, parts: [] };
  if (type.includes('x-www-form-urlencoded')) return { fields: { ...query, ...Object.fromEntries(new URLSearchParams(body)) }, parts: [] };
  if (type.includes('multipart/form-data')) {
    const parts = parseMultipart(raw, type);
    const fields = Object.fromEntries(parts.filter((part) => part.fileName === undefined).map((part) => [part.name, part.bytes.toString('utf8')]));
    return { fields: { ...query, ...fields }, parts };
  }
  return { fields: query, parts: [] };
}

/** The Bot API methods that send a file, and the field that carries it. */
const FILE_METHODS: Record<string, string> = {
  sendDocument: 'document',
  sendPhoto: 'photo',
  sendAudio: 'audio',
  sendVoice: 'voice',
  sendVideo: 'video',
  sendAnimation: 'animation',
};

/**
 * Starts the fake Bot API: `getMe`, long-polled `getUpdates` (text messages, and documents with
 * a caption), `getFile` and the `/file/bot<token>/<file_path>` download of those documents,
 * `sendMessage` (recorded with its HTML decoded, as the chat shows it), `sendDocument` and the
 * other file methods (grammy's multipart body parsed, the file's bytes recorded with the
 * caption), and a plain `true` for every other method the gateway calls at start
 * (`deleteWebhook`, `setMyCommands`, `sendChatAction`, …).
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
  // Attachments users sent, by file id: `getFile` names the path, the download route serves the bytes.
  const files = new Map<string, { readonly filePath: string; readonly document: IncomingDocument }>();
  let nextUpdate = 1;
  // Message ids unique per run: the gateway drops a repeated (chat, message id) as a duplicate.
  let nextMessage = Date.now() % 1_000_000_000;

  const server = http.createServer((request, response) => {
    void (async () => {
      const pathname = new URL(request.url ?? '/', 'http://fake').pathname;
      const reply = (result: unknown, status = 200): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(status === 200 ? { ok: true, result } : { ok: false, error_code: status, description: String(result) }));
      };
      // OpenClaw downloads an attachment from `${apiRoot}/file/bot<token>/<file_path>`.
      const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(pathname);
      if (download) {
        if (download[1] !== botToken) return reply('Unauthorized', 401);
        calls.download = (calls.download ?? 0) + 1;
        const file = [...files.values()].find((candidate) => candidate.filePath === decodeURIComponent(download[2]!));
        if (!file) return reply('Not Found', 404);
        response.writeHead(200, { 'content-type': file.document.mimeType, 'content-length': String(file.document.bytes.length) });
        response.end(file.document.bytes);
        return;
      }
      const match = /^\/bot([^/]+)\/(\w+)$/.exec(pathname);
      if (!match) return reply('Not Found', 404);
      if (match[1] !== botToken) return reply('Unauthorized', 401);
      const method = match[2]!;
      const { fields: parameters, parts } = await readParameters(request);
      calls[method] = (calls[method] ?? 0) + 1;
      const fileField = FILE_METHODS[method];
      if (fileField) {
        const chatId = String(parameters.chat_id);
        // grammy sends `document: "attach://<id>"` and the bytes in the part named <id>.
        const reference = String(parameters[fileField] ?? '');
        const part = parts.find((candidate) => candidate.fileName !== undefined && `attach://${candidate.name}` === reference);
        if (!part) return reply(`no file attached as ${fileField}`, 400);
        const caption = String(parameters.caption ?? '');
        sent.push({
          chatId,
          text: parameters.parse_mode === 'HTML' ? decodeHtml(caption) : caption,
          at: Date.now(),
          file: { method, field: fileField, fileName: part.fileName ?? '', bytes: Buffer.from(part.bytes) },
        });
        for (const watcher of watchers) watcher();
        return reply({
          message_id: nextMessage++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chatId), type: Number(chatId) < 0 ? 'supergroup' : 'private' },
          [fileField]: { file_id: `sent-${nextMessage}`, file_unique_id: `sent-${nextMessage}`, file_name: part.fileName, file_size: part.bytes.length },
          ...(caption ? { caption } : {}),
        });
      }
      switch (method) {
        case 'getFile': {
          const file = files.get(String(parameters.file_id));
          if (!file) return reply('Bad Request: invalid file_id', 400);
          return reply({
            file_id: String(parameters.file_id),
            file_unique_id: `u-${parameters.file_id}`,
            file_size: file.document.bytes.length,
            file_path: file.filePath,
          });
        }
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
        const common = { message_id: nextMessage++, date: Math.floor(Date.now() / 1000), from: { ...message.from, is_bot: false }, chat: message.chat };
        if (message.document) {
          const fileId = `doc-${nextMessage}-${files.size + 1}`;
          files.set(fileId, { filePath: `documents/file_${files.size + 1}${path.extname(message.document.fileName)}`, document: message.document });
          updates.push({
            update_id: nextUpdate++,
            message: {
              ...common,
              caption: message.text,
              document: {
                file_id: fileId,
                file_unique_id: `u-${fileId}`,
                file_name: message.document.fileName,
                mime_type: message.document.mimeType,
                file_size: message.document.bytes.length,
              },
            },
          });
        } else {
          updates.push({ update_id: nextUpdate++, message: { ...common, text: message.text } });
        }
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
              `no sendMessage ${description} within ${timeoutMs / 1000} s; ` +
                `the gateway sent: ${JSON.stringify(sent.map((message) => `${message.chatId}: ${message.text.slice(0, 120)}`))}`,
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
