import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';

const UNICODE = 'héllo wörld — 你好 🚢 ñ Ω';

/** Registers the tests of what one command does: exit codes, streams, stdin, output size, encoding, cwd, persistence. */
export function registerExecTests(fixture: BackendFixture): void {
  const run = fixture.run.bind(fixture, 'alice');
  const expectAlive = async () => expect(await run('echo still-alive')).toMatchObject({ exitCode: 0, stdout: 'still-alive\n', stderr: '' });

  describe('exec semantics', () => {
    it("returns each command's own exit code, and `exit` does not end the session", { timeout: TEST_TIMEOUT_MS }, async () => {
      for (const code of [0, 1, 42]) {
        expect(await run(`exit ${code}`)).toMatchObject({ exitCode: code, timedOut: false });
      }
      expect(await run('true')).toMatchObject({ exitCode: 0 });
      expect(await run('false')).toMatchObject({ exitCode: 1 });
      expect(await run('sh -c "exit 7"')).toMatchObject({ exitCode: 7 });
      expect(await run('command-that-does-not-exist-berth')).toMatchObject({ exitCode: 127 });
      await expectAlive();
    });

    it('keeps stderr apart from stdout', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run('echo to-out; echo to-err >&2; echo more-out; echo more-err 1>&2')).toMatchObject({
        exitCode: 0,
        stdout: 'to-out\nmore-out\n',
        stderr: 'to-err\nmore-err\n',
      });
    });

    it('feeds the given stdin to the command, as text or bytes, small or large', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run('cat', { stdin: 'line one\nline two\n' })).toMatchObject({ exitCode: 0, stdout: 'line one\nline two\n' });
      expect(await run('cat', { stdin: 'no trailing newline' })).toMatchObject({ exitCode: 0, stdout: 'no trailing newline' });
      const bytes = new Uint8Array(256).map((_, index) => index);
      expect(await run('wc -c', { stdin: bytes })).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^\s*256\n$/) });
      expect(await run('wc -c', { stdin: 'x'.repeat(300_000) })).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^\s*300000\n$/) });
      // A megabyte of stdin that nobody reads must not block the command or leak into the next one.
      expect(await run('echo ignored-stdin', { stdin: 'y'.repeat(1_000_000), timeout: 20 })).toMatchObject({
        exitCode: 0,
        stdout: 'ignored-stdin\n',
        timedOut: false,
      });
      await expectAlive();
    });

    it('gives a command without stdin an immediate end of file (a bare `cat` does not hang)', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run('cat; echo after-cat', { timeout: 20 })).toMatchObject({ exitCode: 0, stdout: 'after-cat\n', timedOut: false });
      expect(await run('read line; echo "read=$? [$line]"', { timeout: 20 })).toMatchObject({ exitCode: 0, stdout: 'read=1 []\n' });
      await expectAlive();
    });

    it('caps large output, keeping its head and tail and saying so', { timeout: TEST_TIMEOUT_MS }, async () => {
      const limit = fixture.config('main').docker_output_limit;
      const result = await run('echo BEGIN-MARK; yes abcdefghi | head -c 5000000; echo END-MARK', { timeout: 60 });
      expect(result.exitCode).toBe(0);
      expect(result.truncated).toBe(true);
      expect(result.stdout.startsWith('BEGIN-MARK\n')).toBe(true);
      expect(result.stdout.endsWith('END-MARK\n')).toBe(true);
      expect(Buffer.byteLength(result.stdout)).toBeLessThanOrEqual(limit + 4096);
      // Whatever is left once the pattern and the marks are taken out is the statement of the cut.
      const statement = result.stdout.replace(/BEGIN-MARK\n|END-MARK\n/g, '').replace(/[a-i\n]/g, '');
      expect(statement.length, 'the output says that it was cut').toBeGreaterThan(0);
      const errors = await run('echo ERR-BEGIN >&2; yes abcdefghi | head -c 5000000 >&2; echo ERR-END >&2; echo out-fine', { timeout: 60 });
      expect(errors).toMatchObject({ exitCode: 0, stdout: 'out-fine\n', truncated: true });
      expect(errors.stderr.startsWith('ERR-BEGIN\n') && errors.stderr.endsWith('ERR-END\n'), 'stderr keeps head and tail').toBe(true);
      expect(Buffer.byteLength(errors.stderr)).toBeLessThanOrEqual(limit + 4096);
      await expectAlive();
    });

    it('survives binary output on both streams', { timeout: TEST_TIMEOUT_MS }, async () => {
      const result = await run('head -c 100000 /dev/urandom; head -c 100000 /dev/urandom >&2; printf "\\000\\377\\376"');
      expect(result.exitCode).toBe(0);
      expect(result.stdout.length).toBeGreaterThan(0);
      await expectAlive();
      expect(await run('echo next-ok')).toMatchObject({ exitCode: 0, stdout: 'next-ok\n' });
    });

    it('round-trips unicode in commands, stdin, stdout and stderr, across chunk boundaries', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run(`printf '%s\\n' '${UNICODE}'; printf '%s\\n' '${UNICODE}' >&2`)).toMatchObject({
        exitCode: 0,
        stdout: `${UNICODE}\n`,
        stderr: `${UNICODE}\n`,
      });
      expect(await run('cat', { stdin: UNICODE })).toMatchObject({ exitCode: 0, stdout: UNICODE });
      expect(await run(`printf '%s' '${UNICODE}' | wc -c`)).toMatchObject({
        stdout: expect.stringMatching(new RegExp(`^\\s*${Buffer.byteLength(UNICODE)}\\n$`)),
      });
      // 80 KB of four-byte characters: a stream decoded chunk by chunk breaks some of them.
      const ships = await run(`i=0; while [ $i -lt 20000 ]; do printf '🚢'; i=$((i+1)); done`, { timeout: 60 });
      expect(ships.exitCode).toBe(0);
      expect(ships.stdout === '🚢'.repeat(20_000), `20000 ships came back intact (got ${ships.stdout.length} UTF-16 units)`).toBe(true);
    });

    it('runs in the given cwd', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run('mkdir -p /workspace/cwd-test/sub')).toMatchObject({ exitCode: 0 });
      expect(await run('pwd', { cwd: '/workspace/cwd-test/sub' })).toMatchObject({ exitCode: 0, stdout: '/workspace/cwd-test/sub\n' });
      expect(await run('pwd', { cwd: '/tmp' })).toMatchObject({ exitCode: 0, stdout: '/tmp\n' });
    });

    describe.skipIf(fixture.declaredOff('persistentSession'))('persistent session', () => {
      it('keeps `cd` and `export` between commands', { timeout: TEST_TIMEOUT_MS }, async (context) => {
        await fixture.requireCapability(context, 'persistentSession');
        expect(await run('mkdir -p /workspace/persist && cd /workspace/persist && export BERTH_TESTKIT_PERSIST=kept-1')).toMatchObject({ exitCode: 0 });
        expect(await run('pwd; echo "$BERTH_TESTKIT_PERSIST"')).toMatchObject({ exitCode: 0, stdout: '/workspace/persist\nkept-1\n' });
        expect(await run('cd /tmp; unset BERTH_TESTKIT_PERSIST')).toMatchObject({ exitCode: 0 });
        expect(await run('pwd; echo "[$BERTH_TESTKIT_PERSIST]"')).toMatchObject({ exitCode: 0, stdout: '/tmp\n[]\n' });
      });
    });

    it('handles output without a trailing newline, marker-like text, comments, heredocs and syntax errors', { timeout: TEST_TIMEOUT_MS }, async () => {
      expect(await run('printf no-newline')).toMatchObject({ exitCode: 0, stdout: 'no-newline', stderr: '' });
      expect(await run('printf err-no-newline >&2')).toMatchObject({ exitCode: 0, stdout: '', stderr: 'err-no-newline' });
      // Text shaped like the framing a backend might use must come back as plain output.
      const fake = ['__BERTH_END__ 0', '___BERTH_MARKER___ exit=0', 'BERTH-DONE-0000000000000000 0', '\u001e0\u001f', 'EXIT_CODE=0'];
      const printed = await run(`printf '%s\\n' ${fake.map((line) => `'${line}'`).join(' ')}; printf 'after'; exit 3`);
      expect(printed).toMatchObject({ exitCode: 3, stdout: `${fake.join('\n')}\nafter` });
      expect(await run('echo before-comment # a trailing comment')).toMatchObject({ exitCode: 0, stdout: 'before-comment\n' });
      expect(await run('cat <<EOF\nheredoc line\nEOF')).toMatchObject({ exitCode: 0, stdout: 'heredoc line\n' });
      const broken = await run("echo 'unterminated");
      expect(broken.exitCode).not.toBe(0);
      expect(broken.timedOut).toBe(false);
      await expectAlive();
    });

    it('survives commands that attack their own shell: exec, kill $$, closed stdout, late background output', { timeout: TEST_TIMEOUT_MS }, async () => {
      const settle = (command: string) => run(command, { timeout: 20 }).catch((error: unknown) => error);
      await settle('exec echo replaced-the-shell');
      await expectAlive();
      await settle('kill -9 $$');
      await expectAlive();
      await settle('exec >&- 2>&-; echo into-the-void');
      await expectAlive();
      await settle('exec 0<&-; cat');
      await expectAlive();
      // Output a background job prints after its command returned must not turn up in a later command.
      const tag = `late-${fixture.runId}`;
      await settle(`(sleep 1; echo ${tag}; echo ${tag} >&2) & echo early`);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await run('echo next-command')).toMatchObject({ exitCode: 0, stdout: 'next-command\n', stderr: '' });
    });

    it('refuses or fails a cwd that tries to inject shell code, without running it', { timeout: TEST_TIMEOUT_MS }, async () => {
      const marker = `/tmp/berth-cwd-injected-${fixture.runId}`;
      const outcome = await run('echo ran', { cwd: `/tmp'; touch ${marker}; echo '`, timeout: 20 }).catch((error: unknown) => error);
      if (outcome && typeof outcome === 'object' && 'exitCode' in outcome) expect((outcome as { exitCode: number }).exitCode).not.toBe(0);
      expect(await run(`[ -e ${marker} ] && echo injected || echo clean`)).toMatchObject({ stdout: 'clean\n' });
    });
  });
}
