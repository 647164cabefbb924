import { describe, expect, it } from 'vitest';
import { parseSandboxSocketLine, parseSandboxSocketRequest, SandboxSocketRequestError } from './parse-sandbox-socket-request.js';
import { MAX_SANDBOX_SOCKET_REQUEST_BYTES } from './protocol.js';

function refusal(line: string): SandboxSocketRequestError {
  try {
    parseSandboxSocketRequest(line);
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxSocketRequestError);
    const refused = error as SandboxSocketRequestError;
    expect(refused.message).not.toMatch(/[\r\n]/);
    return refused;
  }
  throw new Error(`${line} was accepted`);
}

describe('parseSandboxSocketRequest', () => {
  it('accepts a full request and keeps every field', () => {
    const request = {
      v: 1,
      sessionKey: 'agent:main:telegram:direct:123',
      taskId: 't1',
      command: 'ls -la',
      cwd: '/tmp',
      timeout: 2.5,
      stdin: 'input\n',
      reply: 'framed',
    };
    expect(parseSandboxSocketRequest(JSON.stringify(request))).toEqual(request);
    expect(parseSandboxSocketRequest('{"v":1,"platform":"telegram","userId":"5","command":"true"}')).toEqual({
      v: 1,
      platform: 'telegram',
      userId: '5',
      command: 'true',
    });
  });

  it("accepts a host profile and its scope's variables, and refuses variables that are not names or too many", () => {
    const request = {
      v: 1,
      platform: 'telegram',
      userId: '5',
      profile: 'work',
      variables: { HERMES_USER_TELEGRAM_5_TOKEN: 't', OPENAI_API_KEY: 'k' },
      command: 'true',
    };
    expect(parseSandboxSocketRequest(JSON.stringify(request))).toEqual(request);
    expect(refusal(JSON.stringify({ ...request, variables: { 'A=B': 'x' } })).message).toMatch(/field variables\.A=B must be a variable name/);
    expect(refusal(JSON.stringify({ ...request, variables: { A: 'x\u0000y' } })).message).toMatch(/must not contain NUL/);
    const many = Object.fromEntries(Array.from({ length: 1025 }, (_, index) => [`V${index}`, '']));
    expect(refusal(JSON.stringify({ ...request, variables: many })).message).toMatch(/at most 1024 variables/);
    expect(refusal(JSON.stringify({ ...request, profile: 'p'.repeat(65) })).message).toMatch(/profile.*at most 64/);
  });

  it('accepts a whole host session: platform, user, chat and session key together, as the Python gateway has them', () => {
    const request = {
      v: 1,
      platform: 'telegram',
      userId: '111111',
      chatId: '111111',
      sessionKey: 'agent:main:telegram:dm:111111',
      taskId: 'default',
      command: 'id',
    };
    expect(parseSandboxSocketRequest(JSON.stringify(request))).toEqual(request);
  });

  it("carries a session without a user as the host gave it (a cron job's platform and chat, a stray user id): core decides, not the parser", () => {
    const cron = { v: 1, platform: 'telegram', chatId: '-1001234', taskId: 'default', sessionRequired: true, command: 'ls' };
    expect(parseSandboxSocketRequest(JSON.stringify(cron))).toEqual(cron);
    expect(parseSandboxSocketRequest('{"v":1,"userId":"5","command":"true"}')).toEqual({ v: 1, userId: '5', command: 'true' });
    expect(parseSandboxSocketRequest('{"v":1,"platform":"telegram","command":"true"}')).toEqual({ v: 1, platform: 'telegram', command: 'true' });
  });

  it.each([
    ['not JSON', '{bad', 'REQUEST_MALFORMED', /not valid JSON/],
    ['an empty line', '', 'REQUEST_MALFORMED', /not valid JSON/],
    ['an array', '[1]', 'REQUEST_INVALID', /must be a JSON object/],
    ['an unknown field', '{"v":1,"command":"x","bogus":1}', 'REQUEST_INVALID', /unknown field "bogus"; the fields are v, sessionKey/],
    ['another version', '{"v":2,"command":"x"}', 'REQUEST_INVALID', /field v must be 1/],
    ['no version', '{"command":"x"}', 'REQUEST_INVALID', /field v/],
    ['no command', '{"v":1}', 'REQUEST_INVALID', /field command is required/],
    ['an empty command', '{"v":1,"command":""}', 'REQUEST_INVALID', /field command must not be empty/],
    ['a reply form it does not know', '{"v":1,"command":"x","reply":"xml"}', 'REQUEST_INVALID', /field reply must be "json" or "framed"/],
    ['a timeout as text', '{"v":1,"command":"x","timeout":"3"}', 'REQUEST_INVALID', /field timeout must be a number/],
    ['a zero timeout', '{"v":1,"command":"x","timeout":0}', 'REQUEST_INVALID', /field timeout must be more than 0/],
    ['a huge timeout', '{"v":1,"command":"x","timeout":1e9}', 'REQUEST_INVALID', /field timeout must be at most 86400/],
    ['a sessionRequired that is not a boolean', '{"v":1,"command":"x","sessionRequired":"yes"}', 'REQUEST_INVALID', /field sessionRequired must be a boolean/],
    ['a NUL in the cwd', '{"v":1,"command":"x","cwd":"/tmp\\u0000x"}', 'REQUEST_INVALID', /field cwd must not contain NUL/],
    ['a numeric user id', '{"v":1,"command":"x","platform":"telegram","userId":5}', 'REQUEST_INVALID', /field userId must be a string/],
  ])('refuses %s with a one-line message', (_label, line, code, message) => {
    const error = refusal(line);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });

  it('refuses a line over the size bound before parsing it', () => {
    const line = JSON.stringify({ v: 1, command: 'x', stdin: 'a'.repeat(MAX_SANDBOX_SOCKET_REQUEST_BYTES) });
    expect(refusal(line).code).toBe('REQUEST_TOO_LARGE');
  });

  it('never echoes a long hostile field name in full', () => {
    const error = refusal(JSON.stringify({ v: 1, command: 'x', [`${'k'.repeat(5000)}\n`]: 1 }));
    expect(error.message.length).toBeLessThan(300);
  });
});

describe('parseSandboxSocketLine', () => {
  const session = { v: 1, platform: 'telegram', userId: '5', sessionRequired: true };

  it('takes a command as parseSandboxSocketRequest does, and the two file operations with the same session fields', () => {
    expect(parseSandboxSocketLine('{"v":1,"command":"true"}')).toEqual({ v: 1, command: 'true' });
    const put = { ...session, op: 'put-file', source: '/home/gw/.hermes/cache/documents/doc_1_a.txt', path: '/workspace/attachments/doc_1_a.txt' };
    expect(parseSandboxSocketLine(JSON.stringify(put))).toEqual(put);
    const get = { ...session, op: 'get-file', path: 'out.txt', target: '/home/gw/.hermes/cache/documents/berth-outbox' };
    expect(parseSandboxSocketLine(JSON.stringify(get))).toEqual(get);
  });

  it.each([
    ['a put-file without its source', { ...session, op: 'put-file', path: '/workspace/a' }, /field source is required/],
    ['a relative source', { ...session, op: 'put-file', source: 'a.txt', path: '/workspace/a' }, /field source must be an absolute host path/],
    ['a get-file without its target', { ...session, op: 'get-file', path: 'a' }, /field target is required/],
    ['a command field on a file operation', { ...session, op: 'get-file', path: 'a', target: '/t', command: 'ls' }, /unknown field "command"/],
    ['an unknown op', { ...session, op: 'rm', command: 'ls' }, /field op must be "exec", "put-file" or "get-file"/],
  ])('refuses %s in one line', (_name, request, message) => {
    let caught: unknown;
    try {
      parseSandboxSocketLine(JSON.stringify(request));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SandboxSocketRequestError);
    expect((caught as SandboxSocketRequestError).code).toBe('REQUEST_INVALID');
    expect((caught as Error).message).toMatch(message);
  });
});
