import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertOffline } from './harness/assert-offline.js';
import { startBlackholeProxy, type BlackholeProxy } from './harness/blackhole-proxy.js';
import { fakeModelProviders, scriptedMessage, startFakeModel, type FakeModel, type ScriptedToolCall } from './harness/fake-model.js';
import { startFakeTelegram, type FakeTelegram, type IncomingMessage, type SentMessage } from './harness/fake-telegram.js';
import {
  createGatewayHome,
  freePort,
  locateOpenClaw,
  locatePluginArchive,
  runOpenClaw,
  startGateway,
  updateConfig,
  type GatewayHome,
  type RunningGateway,
} from './harness/openclaw-gateway.js';
import { assertEngineAnswers, execsCreated, removeSandboxContainersUnder, sandboxContainersUnder, type SandboxContainer } from './harness/sandbox-engine.js';
import { releaseDisksUnder } from '@berth/gateway-plugin';

// Berth inside a real OpenClaw gateway: the pinned openclaw from the npm registry, the berth
// plugin installed from its archive with `openclaw plugins install`, a fake Telegram Bot API
// and a fake model on 127.0.0.1, and every claim checked from outside, on the engine, on the
// disk and in what came back through sendMessage. scripts/run-e2e.sh runs it offline.
const OPENCLAW_VERSION = '2026.9.6';
const IMAGE = process.env.BERTH_TEST_IMAGE ?? 'localhost/berth-busybox:latest';
// Round one makes four sandboxes, each with a disk of its own, while the model waits: 56 s on a
// machine with other suites beside it, over 100 s on a new machine with builds beside it.
const REPLY_TIMEOUT_MS = 240_000;
/** How long OpenClaw may take to start serving, polling Telegram included. */
const GATEWAY_START_MS = 300_000;

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-oc-e2e-'));
const sandboxDir = path.join(root, 'sandboxes');
const socket = path.join(root, 'run', 'berth.sock');
const hex = () => randomBytes(8).toString('hex');
const telegramId = () => randomInt(100_000_000, 2_000_000_000);
const users = { alice: telegramId(), bob: telegramId(), carol: telegramId(), dave: telegramId() };
const groupId = -1_000_000_000_000 - randomInt(1, 1_000_000_000);
type User = keyof typeof users;
const tokens = Object.fromEntries(Object.keys(users).map((name) => [name, `tok-${name}-${hex()}${hex()}`])) as Record<User, string>;
const marks = Object.fromEntries(Object.keys(users).map((name) => [name, `${name}-mark-${hex()}`])) as Record<User, string>;
const notes = { alice: `written-by-the-write-tool-${hex()}`, bob: `written-by-the-write-tool-${hex()}` };
const groupMark = `group-mark-${hex()}`;
const folderOf = (user: User) => path.join(sandboxDir, 'docker', `telegram@${users[user]}`);

let proxy: BlackholeProxy;
let telegram: FakeTelegram;
let model: FakeModel;
let home: GatewayHome;
let gateway: RunningGateway | undefined;
let installOutput = '';
const replies: Record<string, SentMessage> = {};
let containers: SandboxContainer[] = [];
const execs = { roundOne: 0, roundTwo: 0 };
const timings: Record<string, number> = {};
let gatewayRssMb = 0;

const direct = (user: User, text: string): IncomingMessage => ({
  from: { id: users[user], first_name: user },
  chat: { id: users[user], type: 'private', first_name: user },
  text,
});
const exec = (command: string): ScriptedToolCall => ({ name: 'exec', arguments: { command } });
const other = (user: 'alice' | 'bob'): 'alice' | 'bob' => (user === 'alice' ? 'bob' : 'alice');

/** Round one: each user's own files and token, written at once by both. */
const roundOne = (user: 'alice' | 'bob'): string =>
  scriptedMessage(`${user}-1`, [
    { name: 'write', arguments: { path: '/workspace/tool-note.txt', content: notes[user] } },
    exec(
      `printf '%s' '${marks[user]}' > /workspace/own.txt; printf '%s' "$GITHUB_TOKEN" > /workspace/token.txt; ` +
        'echo "token=[$GITHUB_TOKEN]"; echo "own=[$(cat /workspace/own.txt)]"; echo "note=[$(cat /workspace/tool-note.txt)]"',
    ),
  ]);

/** Round two, once the other user's files exist: try to read them, by their host path and by relative escapes, with exec and with the read tool. */
const roundTwo = (user: 'alice' | 'bob'): string => {
  const theirs = path.join(folderOf(other(user)), 'workspace');
  return scriptedMessage(`${user}-2`, [
    exec(
      `echo "other=[$(cat ${theirs}/own.txt 2>&1)]"; echo "other-token=[$(cat ${theirs}/token.txt 2>&1)]"; ` +
        `echo "escape=[$(cat /workspace/../telegram@${users[other(user)]}/workspace/own.txt 2>&1)]"; echo "still=[$(cat /workspace/own.txt)]"`,
    ),
    { name: 'read', arguments: { path: `${theirs}/own.txt` } },
    { name: 'read', arguments: { path: `../telegram@${users[other(user)]}/workspace/own.txt` } },
    { name: 'read', arguments: { path: 'tool-note.txt' } },
  ]);
};

/** Every regular file under `folder`, with its path. */
function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** The folders under {sandbox_dir}/docker that hold any file containing `needle`. */
function foldersHolding(needle: string): string[] {
  const top = path.join(sandboxDir, 'docker');
  const holders = new Set<string>();
  for (const file of filesUnder(top)) {
    if (readFileSync(file).includes(needle)) holders.add(path.relative(top, file).split(path.sep)[0]!);
  }
  return [...holders].sort();
}

const resultTo = (chat: number, label: string) => (message: SentMessage) => message.chatId === String(chat) && message.text.startsWith(`RESULT ${label}:`);

beforeAll(async () => {
  await assertOffline();
  await assertEngineAnswers(IMAGE);
  const install = locateOpenClaw(OPENCLAW_VERSION);
  const archive = locatePluginArchive();
  [proxy, telegram, model] = await Promise.all([startBlackholeProxy(), startFakeTelegram(), startFakeModel()]);
  home = createGatewayHome(root, {
    proxyUrl: proxy.url,
    extra: Object.fromEntries(Object.entries(users).map(([name, id]) => [`HERMES_USER_TELEGRAM_${id}_GITHUB_TOKEN`, tokens[name as User]])),
  });

  // Installed as a user installs it: the CLI against the gateway's own config, then the lines
  // of openclaw.json the README gives.
  updateConfig(home, {
    gateway: { mode: 'local', bind: 'loopback', port: await freePort(), auth: { mode: 'none' } },
    logging: { file: home.logFile, level: 'info' },
  });
  let started = performance.now();
  installOutput = await runOpenClaw(install, home, ['plugins', 'install', archive, '--force', '--accept-capabilities']);
  timings.pluginInstallMs = performance.now() - started;
  updateConfig(home, {
    update: { checkOnStart: false },
    discovery: { mdns: { mode: 'off' } },
    session: { dmScope: 'per-channel-peer' },
    // Carol's direct chats use the per-account key, Dave's the per-peer key (no channel).
    bindings: [
      { agentId: 'main', match: { channel: 'telegram', peer: { kind: 'direct', id: String(users.carol) } }, session: { dmScope: 'per-account-channel-peer' } },
      { agentId: 'main', match: { channel: 'telegram', peer: { kind: 'direct', id: String(users.dave) } }, session: { dmScope: 'per-peer' } },
    ],
    channels: {
      telegram: {
        enabled: true,
        botToken: telegram.botToken,
        apiRoot: telegram.apiRoot,
        dmPolicy: 'open',
        allowFrom: ['*'],
        groupPolicy: 'open',
        groups: { '*': { requireMention: false } },
      },
    },
    models: fakeModelProviders(model, { contextWindow: 64_000 }),
    agents: {
      defaults: { model: { primary: `fake/${model.modelId}` }, sandbox: { mode: 'all', backend: 'berth', scope: 'session', workspaceAccess: 'none' } },
    },
    // OpenClaw backgrounds a command still running after tools.exec.backgroundMs (10 s by
    // default) and replies "Command still running"; a user's first command makes their sandbox,
    // which on a machine busy with other work can take longer than that. Its ceiling, 120 s, so
    // every reply holds the command's output.
    tools: { toolSearch: false, exec: { backgroundMs: 120_000 } },
    // A message that arrives while the chat's previous run is still finishing runs after it,
    // instead of being steered into that run (OpenClaw's default queue mode).
    messages: { queue: { mode: 'followup' } },
    plugins: {
      entries: {
        berth: {
          enabled: true,
          // before_agent_finalize (MEDIA: files from the sandbox) is a conversation hook: granted here, as the README says.
          hooks: { allowConversationAccess: true },
          config: { terminal: { docker_image: IMAGE, sandbox_dir: sandboxDir, docker_network: false, lifetime_seconds: 0, timeout: 60 }, socket },
        },
      },
    },
  });

  if (process.env.BERTH_E2E_INSPECT)
    console.info(
      `[inspect] ${await runOpenClaw(install, home, ['plugins', 'inspect', 'berth', '--runtime', '--json']).catch((error: unknown) => String(error))}`,
    );
  started = performance.now();
  gateway = startGateway(install, home);
  // OpenClaw takes about 40 s to start on an idle two-core machine, and more than two minutes
  // while a new machine compiles the test cluster and runs the engine suites beside it.
  await gateway.waitForOutput(/berth: serving sandboxes on/, GATEWAY_START_MS);
  await gateway.waitForOutput(/\[telegram\][^\n]*starting provider/, GATEWAY_START_MS);
  while ((telegram.calls().getUpdates ?? 0) === 0) {
    if (performance.now() - started > GATEWAY_START_MS)
      throw new Error(`the gateway never polled the fake Telegram; its last lines:\n${gateway.output().split('\n').slice(-12).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  timings.gatewayReadyMs = performance.now() - started;

  // Round one: everyone at once, Alice and Bob in the same batch of updates.
  const roundOneSince = Math.floor(Date.now() / 1000) - 1;
  started = performance.now();
  telegram.deliver(
    direct('alice', roundOne('alice')),
    direct('bob', roundOne('bob')),
    direct(
      'carol',
      scriptedMessage('carol-1', [
        exec(`printf '%s' '${marks.carol}' > /workspace/own.txt; printf '%s' "$GITHUB_TOKEN" > /workspace/token.txt; echo "token=[$GITHUB_TOKEN]"`),
      ]),
    ),
    {
      from: { id: users.alice, first_name: 'alice' },
      chat: { id: groupId, type: 'supergroup', title: 'Berth e2e group' },
      text: scriptedMessage('group-1', [exec(`printf '%s' '${groupMark}' > /workspace/group.txt; echo "token=[\${GITHUB_TOKEN:-none}]"; ls /workspace`)]),
    },
    direct('dave', scriptedMessage('dave-1', [exec(`printf '%s' "$GITHUB_TOKEN" > /workspace/token.txt; echo "token=[$GITHUB_TOKEN]"`)])),
  );
  const waits: Array<[string, Promise<SentMessage>]> = [
    ['alice-1', telegram.waitForMessage(resultTo(users.alice, 'alice-1'), REPLY_TIMEOUT_MS, "with Alice's first result")],
    ['bob-1', telegram.waitForMessage(resultTo(users.bob, 'bob-1'), REPLY_TIMEOUT_MS, "with Bob's first result")],
    ['carol-1', telegram.waitForMessage(resultTo(users.carol, 'carol-1'), REPLY_TIMEOUT_MS, "with Carol's result")],
    ['group-1', telegram.waitForMessage(resultTo(groupId, 'group-1'), REPLY_TIMEOUT_MS, "with the group's result")],
    [
      'dave-1',
      telegram.waitForMessage(
        (message) => message.chatId === String(users.dave) && !/^working$/i.test(message.text.trim()),
        REPLY_TIMEOUT_MS,
        'answering Dave',
      ),
    ],
  ];
  for (const [label, reply] of waits) replies[label] = await reply;
  timings.roundOneMs = performance.now() - started;

  // Round two: now that both users' files exist, each tries to read the other's.
  const roundTwoSince = Math.ceil(Date.now() / 1000);
  // OpenClaw is still closing a chat's run for a moment after its reply; a message that arrives
  // then can be lost instead of queued (seen in the bench), so Alice and Bob wait a little.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  started = performance.now();
  telegram.deliver(direct('alice', roundTwo('alice')), direct('bob', roundTwo('bob')));
  replies['alice-2'] = await telegram.waitForMessage(resultTo(users.alice, 'alice-2'), REPLY_TIMEOUT_MS, "with Alice's second result");
  replies['bob-2'] = await telegram.waitForMessage(resultTo(users.bob, 'bob-2'), REPLY_TIMEOUT_MS, "with Bob's second result");
  timings.roundTwoMs = performance.now() - started;
  const status = existsSync(`/proc/${gateway.process.pid}/status`) ? readFileSync(`/proc/${gateway.process.pid}/status`, 'utf8') : '';
  gatewayRssMb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  containers = await sandboxContainersUnder(root);
  const ids = containers.map((container) => container.id);
  const until = Math.ceil(Date.now() / 1000) + 1;
  execs.roundOne = await execsCreated(ids, roundOneSince, roundTwoSince);
  execs.roundTwo = await execsCreated(ids, roundTwoSince, until);
}, 1_200_000);

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([proxy?.close(), telegram?.close(), model?.close()]);
  await removeSandboxContainersUnder(root);
  console.info(
    `[openclaw e2e] ${Object.entries(timings)
      .map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s`)
      .join(', ')}; gateway RSS ${Math.round(gatewayRssMb)} MB; outbound attempts refused: ${JSON.stringify([...new Set(proxy?.attempts() ?? [])])}`,
  );
  // Without the last reply the set-up failed: its cause is in the gateway's log, which goes with the folder below.
  const failed = replies['bob-2'] === undefined;
  if (failed && !process.env.BERTH_E2E_VERBOSE) {
    console.info(
      `[openclaw e2e] the set-up failed; the gateway's lines about Berth, errors and failures:\n${`${gateway?.log() ?? ''}\n${gateway?.output() ?? ''}`
        .split('\n')
        .filter((line) => /berth|error|fail|wrong/i.test(line))
        .slice(-80)
        .map((line) => line.slice(0, 600))
        .join('\n')}`,
    );
  }
  if (process.env.BERTH_E2E_VERBOSE) {
    console.info(
      JSON.stringify(
        { replies, execs, sent: telegram?.sent().map(({ file, ...message }) => ({ ...message, file: file && { ...file, bytes: file.bytes.length } })) },
        null,
        1,
      ),
    );
    console.info(
      `[openclaw e2e] the gateway's lines about Berth, hooks and media:\n${`${gateway?.log() ?? ''}\n${gateway?.output() ?? ''}`
        .split('\n')
        .filter((line) => /berth|hook/i.test(line) && !line.startsWith('{'))
        .slice(-200)
        .join('\n')}`,
    );
  }
  // Each user's disk (container_disk) is mounted under the root: unmounted first.
  await releaseDisksUnder(root);
  rmSync(root, { recursive: true, force: true });
});

describe('Berth inside a real OpenClaw gateway', () => {
  it('installs from its archive with openclaw plugins install and serves its socket inside the gateway', () => {
    expect(installOutput).toContain('Installed plugin: berth');
    expect(existsSync(path.join(home.stateDir, 'extensions', 'berth', 'openclaw.plugin.json'))).toBe(true);
    expect(gateway!.log()).toContain(`berth: serving sandboxes on ${socket}`);
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
  });

  it('gives the two users who wrote at once a container and a folder each', () => {
    const workspaces = containers.map((container) => container.workspace);
    expect(workspaces).toContain(path.join(folderOf('alice'), 'workspace'));
    expect(workspaces).toContain(path.join(folderOf('bob'), 'workspace'));
    expect(new Set(workspaces).size).toBe(containers.length);
    expect(readFileSync(path.join(folderOf('alice'), 'workspace', 'own.txt'), 'utf8')).toBe(marks.alice);
    expect(readFileSync(path.join(folderOf('bob'), 'workspace', 'own.txt'), 'utf8')).toBe(marks.bob);
    for (const container of containers) {
      // Container names and labels say nothing about who is there.
      for (const id of Object.values(users)) expect(container.name).not.toContain(String(id));
      expect(container.name).not.toMatch(/telegram/i);
    }
  });

  it("puts each token only in its owner's sandbox, never in the engine's records", () => {
    expect(readFileSync(path.join(folderOf('alice'), 'workspace', 'token.txt'), 'utf8')).toBe(tokens.alice);
    expect(readFileSync(path.join(folderOf('bob'), 'workspace', 'token.txt'), 'utf8')).toBe(tokens.bob);
    expect(readFileSync(path.join(folderOf('carol'), 'workspace', 'token.txt'), 'utf8')).toBe(tokens.carol);
    expect(foldersHolding(tokens.alice)).toEqual([`telegram@${users.alice}`]);
    expect(foldersHolding(tokens.bob)).toEqual([`telegram@${users.bob}`]);
    expect(foldersHolding(tokens.carol)).toEqual([`telegram@${users.carol}`]);
    for (const container of containers) for (const token of Object.values(tokens)) expect(container.inspected).not.toContain(token);
  });

  it("leaves the other user's files unreadable, by exec and by the read tool", () => {
    for (const user of ['alice', 'bob'] as const) {
      const reply = replies[`${user}-2`]!.text;
      expect(reply).toMatch(/other=\[cat: .*No such file or directory\]/);
      expect(reply).toMatch(/other-token=\[cat: .*No such file or directory\]/);
      expect(reply).toMatch(/escape=\[cat: .*No such file or directory\]/);
      expect(reply).toContain(`still=[${marks[user]}]`);
      expect(reply).not.toContain(marks[other(user)]);
      expect(reply).not.toContain(tokens[other(user)]);
      expect(reply).toContain("outside the sandbox's /workspace");
    }
  });

  it('masks every token in the replies that came back through sendMessage', () => {
    expect(replies['alice-1']!.text).toContain('token=[***]');
    expect(replies['bob-1']!.text).toContain('token=[***]');
    expect(replies['carol-1']!.text).toContain('token=[***]');
    for (const message of telegram.sent()) for (const token of Object.values(tokens)) expect(message.text).not.toContain(token);
  });

  it("lands files OpenClaw writes through its fs bridge in the same user's sandbox", () => {
    expect(readFileSync(path.join(folderOf('alice'), 'workspace', 'tool-note.txt'), 'utf8')).toBe(notes.alice);
    expect(readFileSync(path.join(folderOf('bob'), 'workspace', 'tool-note.txt'), 'utf8')).toBe(notes.bob);
    // The command that ran next in the sandbox saw the file the write tool made, and the read
    // tool reads it back from the same place.
    expect(replies['alice-1']!.text).toContain(`note=[${notes.alice}]`);
    expect(replies['alice-2']!.text).toContain(notes.alice);
    expect(replies['bob-2']!.text).toContain(notes.bob);
    expect(replies['alice-2']!.text).not.toContain(notes.bob);
    expect(replies['alice-1']!.text).toContain(`own=[${marks.alice}]`);
    expect(foldersHolding(notes.alice)).toEqual([`telegram@${users.alice}`]);
  });

  it("runs the per-account-channel-peer key in that user's own sandbox", () => {
    expect(readFileSync(path.join(folderOf('carol'), 'workspace', 'own.txt'), 'utf8')).toBe(marks.carol);
    expect(containers.map((container) => container.workspace)).toContain(path.join(folderOf('carol'), 'workspace'));
  });

  it("gives the group chat a sandbox of its own, with no user's token", () => {
    const holders = foldersHolding(groupMark);
    expect(holders).toHaveLength(1);
    expect(holders[0]).not.toMatch(/^telegram@/);
    const groupWorkspace = path.join(sandboxDir, 'docker', holders[0]!, 'workspace');
    expect(containers.map((container) => container.workspace)).toContain(groupWorkspace);
    expect(existsSync(path.join(folderOf('alice'), 'workspace', 'group.txt'))).toBe(false);
    expect(replies['group-1']!.text).toContain('token=[none]');
  });

  it('refuses the per-peer key with the line that names session.dmScope: per-channel-peer, and runs nothing', () => {
    expect(replies['dave-1']!.text).not.toMatch(/^RESULT/);
    const logged = `${gateway!.log()}\n${gateway!.output()}`.split('\n');
    const refusal = logged.find((line) => line.includes('session key agent:<agent>:direct:<peer>') && line.includes('session.dmScope: per-channel-peer'));
    expect(refusal, 'the refusal in the gateway log').toBeDefined();
    expect(existsSync(folderOf('dave'))).toBe(false);
    expect(foldersHolding(tokens.dave)).toEqual([]);
    expect(existsSync(path.join(sandboxDir, 'docker', 'default'))).toBe(false);
  });

  it('has exactly the four sandboxes it should: Alice, Bob, Carol and the group', () => {
    expect(containers).toHaveLength(4);
    const folders = readdirSync(path.join(sandboxDir, 'docker'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
      .map((entry) => entry.name);
    expect(folders).toHaveLength(4);
  });

  it('keeps the shells warm and starts them without the engine: no engine exec at all', () => {
    // The sandboxes' shells start through each sandbox's launcher (its channel folder's FIFOs), and every command runs in them.
    expect(execs.roundOne).toBe(0);
    expect(execs.roundTwo).toBe(0);
  });
});

// Round three: files between the chat and the user's own sandbox (docs/openclaw.md, "Files").
// Alice sends a document; her agent reads it at the path OpenClaw told it, and answers with a
// file of her /workspace. Bob's agent then looks for Alice's files everywhere it can and names
// them for delivery in every way that a naive mapping would have let through.
describe('files between the chat and the sandbox', () => {
  const documentMark = `alice-document-${hex()}`;
  const documentLine = `the second line of the report, ${hex()}`;
  const documentBytes = Buffer.from(`${documentMark}\n${documentLine}\n`);
  const aliceOutMark = `alice-out-${hex()}`;
  const bobOutMark = `bob-out-${hex()}`;
  const aliceOut = () => path.join(folderOf('alice'), 'workspace', 'out', 'alice-result.txt');
  let aliceReply: SentMessage;
  let stagedPath = '';
  /** OpenClaw's own host copy of Alice's workspace ($STATE/sandboxes/<her scope>), where it reads MEDIA: files. */
  let aliceOpenClawCopy = '';
  let bobLog = '';

  /**
   * OpenClaw's host copies of the sessions' workspaces ($STATE/sandboxes/<scope>: the factory's
   * workspaceDir), where it stages attachments and reads MEDIA: files. (Its media store and its
   * transcripts hold the conversation, the document's text included: they are the gateway's own.)
   */
  const openClawCopies = () => path.join(home.stateDir, 'sandboxes');
  const openClawWorkspaceFiles = () => filesUnder(openClawCopies());

  beforeAll(async () => {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    let started = performance.now();
    telegram.deliver({
      ...direct(
        'alice',
        scriptedMessage(
          'alice-3',
          [
            exec(`echo "path=[{media}]"; echo "got=[$(head -n 1 '{media}')]"`),
            { name: 'read', arguments: { path: '{media}' } },
            exec(
              `mkdir -p /workspace/out && for i in 1 2 3 4 5 6 7 8; do echo "line $i ${aliceOutMark}"; done > /workspace/out/alice-result.txt && echo written`,
            ),
          ],
          { final: 'MEDIA:/workspace/out/alice-result.txt' },
        ),
      ),
      document: { fileName: 'report.txt', mimeType: 'text/plain', bytes: documentBytes },
    });
    aliceReply = await telegram.waitForMessage(resultTo(users.alice, 'alice-3'), REPLY_TIMEOUT_MS, "with Alice's result for her document");
    // The file comes in its own message (or with the text as its caption): wait for it too.
    await telegram.waitForMessage((message) => message.chatId === String(users.alice) && message.file !== undefined, 30_000, "with Alice's file");
    timings.filesAliceMs = performance.now() - started;

    stagedPath = /path=\[(media\/inbound\/openclaw-staged-[^\]]+)\]/.exec(aliceReply.text)?.[1] ?? '';
    const copy = openClawWorkspaceFiles().find((file) => file.endsWith(`${path.sep}out${path.sep}alice-result.txt`));
    aliceOpenClawCopy = copy ? path.dirname(path.dirname(copy)) : path.join(home.stateDir, 'no-copy-of-alice-found');
    const aliceSlug = path.basename(aliceOpenClawCopy);

    await new Promise((resolve) => setTimeout(resolve, 2000));
    started = performance.now();
    const logBefore = gateway!.log().length;
    telegram.deliver(
      direct(
        'bob',
        scriptedMessage(
          'bob-3',
          [
            // Bob's command looks for Alice's attachment and her file everywhere it can.
            exec(
              `echo "find=[$(find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name 'input-report*' -o -name 'alice-result.txt' \\) ` +
                `-print 2>/dev/null)]"; echo "staged=[$(cat /workspace/${stagedPath} 2>&1)]"; echo "berth-host=[$(cat ${aliceOut()} 2>&1)]"; ` +
                `echo "openclaw-host=[$(cat ${aliceOpenClawCopy}/out/alice-result.txt 2>&1)]"`,
            ),
            exec(
              [
                `printf '%s' '${bobOutMark}' > /workspace/bob-own.txt`,
                // Links in Bob's workspace to Alice's host folders. A naive mapping of
                // /workspace/x onto Bob's host folder ({sandbox_dir}/docker/telegram@<bob>/workspace/x),
                // opened by path on the host, follows them to Alice's bytes.
                `ln -sf ${aliceOut()} /workspace/link-berth.txt`,
                `ln -sf ${aliceOpenClawCopy}/out/alice-result.txt /workspace/link-openclaw.txt`,
                `ln -sf /proc/1/environ /workspace/environ.txt`,
                // The race: race.txt flips between Bob's own file and a link to Alice's. A naive
                // host check (lstat: a regular file) followed by an open by path opens the link
                // swapped in between.
                "nohup sh -c 'i=0; while [ $i -lt 20000 ]; do printf bob > /workspace/race.new; mv -f /workspace/race.new /workspace/race.txt; " +
                  `ln -sf ${aliceOut()} /workspace/race.txt; i=$((i+1)); done' >/dev/null 2>&1 </dev/null &`,
                'echo prepared',
              ].join('\n'),
            ),
          ],
          {
            final: [
              'Here you go.',
              // A naive mapping that sends any absolute host path (as Hermes' default delivery check does) sends these.
              `MEDIA:${aliceOut()}`,
              `MEDIA:${aliceOpenClawCopy}/out/alice-result.txt`,
              // A naive join of the path onto Bob's folders resolves these into Alice's.
              `MEDIA:../${aliceSlug}/out/alice-result.txt`,
              `MEDIA:/workspace/../${aliceSlug}/out/alice-result.txt`,
              `MEDIA:/workspace/../../telegram@${users.alice}/workspace/out/alice-result.txt`,
              'MEDIA:/workspace/link-berth.txt',
              'MEDIA:/workspace/link-openclaw.txt',
              'MEDIA:/workspace/race.txt',
              // Refused in Bob's own sandbox: a link out of his folders, a file holding his token.
              'MEDIA:/workspace/environ.txt',
              'MEDIA:/workspace/token.txt',
              // And his own file, which must arrive: the refusals above are not a broken delivery.
              'MEDIA:/workspace/bob-own.txt',
            ].join('\n'),
          },
        ),
      ),
    );
    await telegram.waitForMessage(resultTo(users.bob, 'bob-3'), REPLY_TIMEOUT_MS, "with Bob's result for the attacks");
    await telegram.waitForMessage((message) => message.chatId === String(users.bob) && message.file !== undefined, 30_000, "with Bob's own file");
    // Any later file (a failure note, another document) has a moment to arrive.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    timings.filesBobMs = performance.now() - started;
    bobLog = gateway!.log().slice(logBefore);
  }, 600_000);

  const chatOf = (user: User) => telegram.sent().filter((message) => message.chatId === String(users[user]));
  const bobText = () =>
    chatOf('bob')
      .map((message) => message.text)
      .join('\n');

  it("puts Alice's attachment in her own sandbox only, at the path OpenClaw told her agent", () => {
    // OpenClaw names the staged copy after its download, which carries an id of its own: input-report---<uuid>.txt.
    expect(stagedPath).toMatch(/^media\/inbound\/openclaw-staged-[0-9a-f-]+\/input-report[^/]*\.txt$/);
    expect(aliceReply.text).toContain(`got=[${documentMark}]`);
    // The read tool (OpenClaw's fs bridge) finds it at the same path.
    expect(aliceReply.text).toContain(documentLine);
    expect(readFileSync(path.join(folderOf('alice'), 'workspace', stagedPath))).toEqual(documentBytes);
    expect(foldersHolding(documentMark)).toEqual([`telegram@${users.alice}`]);
    // OpenClaw's staged host copy is gone: its host folders hold no copy of the document.
    expect(existsSync(openClawCopies())).toBe(true);
    expect(openClawWorkspaceFiles().filter((file) => readFileSync(file).includes(documentMark))).toEqual([]);
    expect(telegram.calls().getFile).toBeGreaterThanOrEqual(1);
  });

  it('sends Alice exactly the bytes of the file in her /workspace, in her chat', () => {
    const files = chatOf('alice').filter((message) => message.file !== undefined);
    expect(files.map((message) => message.file!.fileName)).toEqual(['alice-result.txt']);
    expect(files[0]!.file!.bytes).toEqual(readFileSync(aliceOut()));
    expect(files[0]!.file!.bytes.toString('utf8')).toContain(`line 8 ${aliceOutMark}`);
  });

  it("lets Bob's commands find neither Alice's attachment nor her file", () => {
    const reply = bobText();
    expect(reply).toContain('find=[]');
    expect(reply).toMatch(/staged=\[cat: .*No such file or directory\]/);
    expect(reply).toMatch(/berth-host=\[cat: .*No such file or directory\]/);
    expect(reply).toMatch(/openclaw-host=\[cat: .*No such file or directory\]/);
    expect(reply).not.toContain(documentMark);
  });

  it("never sends Alice's bytes to Bob's chat, whatever path his agent names, and says what was not sent", () => {
    expect(aliceOpenClawCopy.startsWith(`${openClawCopies()}${path.sep}`), aliceOpenClawCopy).toBe(true);
    const bobFiles = chatOf('bob').filter((message) => message.file !== undefined);
    for (const message of chatOf('bob')) {
      expect(message.text).not.toContain(aliceOutMark);
      expect(message.text).not.toContain(documentMark);
      expect(message.file?.bytes.toString('utf8') ?? '').not.toContain(aliceOutMark);
      expect(message.file?.bytes.toString('utf8') ?? '').not.toContain(documentMark);
    }
    // His own file arrives, exactly; the race file, if it arrived, is his own.
    expect(bobFiles.find((message) => message.file!.fileName === 'bob-own.txt')?.file?.bytes.toString('utf8')).toBe(bobOutMark);
    for (const message of bobFiles.filter((candidate) => candidate.file!.fileName === 'race.txt')) expect(message.file!.bytes.toString('utf8')).toBe('bob');
    // No other file of his reached the chat: not the links, not his environment, not his token.
    expect(bobFiles.map((message) => message.file!.fileName).filter((name) => !['bob-own.txt', 'race.txt'].includes(name))).toEqual([]);
    for (const message of chatOf('bob')) expect(message.file?.bytes.toString('utf8') ?? '').not.toContain(tokens.bob);
    // What Bob sees for each file not sent: OpenClaw's note naming it.
    expect(bobText()).toMatch(/link-berth\.txt: File not found/);
    expect(bobText()).toMatch(/environ\.txt: File not found/);
    expect(bobText()).toMatch(/token\.txt: File not found/);
    // Why, in the gateway's log: Berth's refusal of each.
    expect(bobLog).toMatch(/berth: a MEDIA: file was not sent: \/workspace\/link-berth\.txt does not exist in the sandbox/);
    expect(bobLog).toMatch(/berth: a MEDIA: file was not sent: \/workspace\/environ\.txt leads outside the sandbox's \/workspace, \/root and \/tmp/);
    expect(bobLog).toMatch(/berth: a MEDIA: file was not sent: \/workspace\/token\.txt holds the value of one of the sandbox's credentials/);
  });

  it("leaves no user's file in OpenClaw's host folders but the copies just sent", () => {
    for (const file of openClawWorkspaceFiles()) {
      const bytes = readFileSync(file);
      expect(bytes.includes(tokens.alice) || bytes.includes(tokens.bob), file).toBe(false);
      if (bytes.includes(aliceOutMark)) expect(file.startsWith(`${aliceOpenClawCopy}${path.sep}`), file).toBe(true);
    }
  });
});
