import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildEnvironmentScript, encodePrintfFormat, isPlainProgram, needsOwnShell, quoteShell } from './shell-protocol.js';
import { helperScriptCommand } from './shell-words.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../../vitest.shared.js';

// The host's own POSIX shell checks the quoting; no engine is involved.
const sh = (script: string): Buffer => execFileSync('/bin/sh', ['-c', script]);

describe('quoteShell', () => {
  it('round-trips any text without NUL through a real shell', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }).filter((value) => !value.includes('\0')),
        (value) => {
          expect(sh(`printf '%s' ${quoteShell(value)}`).toString('utf8')).toBe(Buffer.from(value, 'utf8').toString('utf8'));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses NUL', () => {
    expect(() => quoteShell('a\0b')).toThrow(/NUL/);
  });
});

describe('encodePrintfFormat', () => {
  it('prints exactly the given bytes, NUL, quotes, escapes and digits after escapes included', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect([...sh(`printf ${encodePrintfFormat(bytes)}`)]).toEqual([...bytes]);
      }),
      { numRuns: 60 },
    );
    const tricky = Buffer.from('\u0000123 %d %s \\n \\0 \' "', 'utf8');
    expect([...sh(`printf ${encodePrintfFormat(tricky)}`)]).toEqual([...tricky]);
    for (const option of ['-', '-n x', '--', '-\0']) {
      expect(sh(`printf ${encodePrintfFormat(Buffer.from(option))}`).toString()).toBe(option);
    }
  });
});

describe('buildEnvironmentScript', () => {
  it('exports values verbatim, whatever they hold, and unsets removed names', () => {
    const variables = { TOKEN: "it's $HOME `id` \\ \n second line", EMPTY: '' };
    const script = `OLD=1; export OLD\n${buildEnvironmentScript(variables, ['OLD'])}printf '%s|%s|%s' "$TOKEN" "$EMPTY" "\${OLD-unset}"`;
    expect(sh(script).toString()).toBe(`${variables.TOKEN}||unset`);
  });

  it('skips names that are not shell variable names', () => {
    expect(buildEnvironmentScript({ 'BAD;rm -rf /': 'x', GOOD: 'y' })).toBe("export GOOD='y'\n");
  });
});

describe('isPlainProgram and needsOwnShell', () => {
  it('takes one program with plain words for one, and nothing the shell has to do', () => {
    for (const command of [
      '/bin/true',
      'ls -la /workspace',
      'git status',
      'python3 -m pytest -x tests/unit',
      'npm run build --if-present',
      'make -j4 CC=gcc',
    ]) {
      expect(isPlainProgram(command), command).toBe(true);
    }
    for (const command of [
      'cd /tmp',
      'export A=1',
      'A=1 env',
      'echo hi',
      'true',
      'ls *.ts',
      'ls ~',
      'cat a > b',
      'a | b',
      'a; b',
      'a && b',
      'a &',
      'echo "$HOME"',
      "ls 'x y'",
      ' ls',
      'ls\n',
      'if x',
      'exec ls',
      'source venv/bin/activate',
      '. ./env',
      'kill 1',
      'read x',
      'ls # note',
      'ls $(pwd)',
      'ls `pwd`',
      'ls \\x',
      '',
    ]) {
      expect(isPlainProgram(command), command).toBe(false);
    }
  });

  it("sends a command that reads the shell's own id or its parent's to a shell of its own", () => {
    for (const command of ['echo $$', 'kill ${$}', 'echo $PPID', 'echo ${PPID}', 'tmp=/tmp/x.$$; touch "$tmp"'])
      expect(needsOwnShell(command), command).toBe(true);
    for (const command of ['echo $HOME', 'ls', 'printf "%s$" x']) expect(needsOwnShell(command), command).toBe(false);
  });
});

describe('helperScriptCommand', () => {
  it("runs Berth's step in /bin/sh with the system's PATH, its words intact, whatever the caller's PATH and preload say", () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-helper-'));
    // A planted `cat` and `base64` first in PATH, and a preload and start-up file that would break any shell.
    for (const tool of ['cat', 'base64']) writeFileSync(path.join(folder, tool), '#!/bin/sh\necho planted\n', { mode: 0o755 });
    const environment = { PATH: `${folder}:/usr/bin:/bin`, LD_PRELOAD: path.join(folder, 'missing.so'), ENV: path.join(folder, 'missing.sh') };
    const words = ["it's", '$(id)', 'a b'];
    const printed = execSync(helperScriptCommand('printf "%s|" "$0" "$@"; printf x | cat', 'berth-step', words), {
      env: environment,
      encoding: 'utf8',
      shell: '/bin/sh',
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    expect(printed).toBe(`berth-step|it's|$(id)|a b|x`);
    const decoded = execSync(helperScriptCommand('cat', 'berth-step', [], { decodeStdin: true }), {
      env: environment,
      shell: '/bin/sh',
      input: Buffer.from([0, 1, 2, 0xff]).toString('base64'),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    expect(decoded).toEqual(Buffer.from([0, 1, 2, 0xff]));
  });
});
