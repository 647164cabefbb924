import { existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture, type SuiteUserName } from './create-backend-fixture.js';

/** Registers the tests that files land on the host where the brief says: user layout and legacy task layout. */
export function registerLayoutTests(fixture: BackendFixture): void {
  const writeBoth = (tag: string) => `echo work-${tag} > /workspace/layout-${tag}.txt && echo home-${tag} > /root/layout-${tag}.txt`;

  const expectFilesAt = async (workspace: string, home: string, tag: string) => {
    expect(await readFile(path.join(workspace, `layout-${tag}.txt`), 'utf8')).toBe(`work-${tag}\n`);
    expect(await readFile(path.join(home, `layout-${tag}.txt`), 'utf8')).toBe(`home-${tag}\n`);
  };

  // Only for backends whose files are host folders; a Kubernetes sandbox keeps them in a claim.
  describe.skipIf(fixture.declaredOff('hostFolders'))('host layout', () => {
    beforeEach(async (context) => {
      await fixture.requireCapability(context, 'hostFolders');
    });

    it("a user's /workspace and /root are {sandbox_dir}/docker/{folder}/workspace and /home on the host", { timeout: TEST_TIMEOUT_MS }, async () => {
      const alice = fixture.user('alice').request;
      expect(alice.scope.kind).toBe('user');
      const folder = path.join(fixture.sandboxDir, 'docker', alice.scope.folderName);
      expect(alice.paths.workspace).toBe(path.join(folder, 'workspace'));
      expect(alice.paths.home).toBe(path.join(folder, 'home'));

      const tag = `user-${fixture.runId}`;
      expect(await fixture.run('alice', writeBoth(tag))).toMatchObject({ exitCode: 0 });
      await expectFilesAt(path.join(folder, 'workspace'), path.join(folder, 'home'), tag);

      // The other way round: a file the host puts there is what the sandbox reads (a mount, not a copy).
      await writeFile(path.join(alice.paths.workspace, `from-host-${tag}.txt`), `host-${tag}\n`);
      expect(await fixture.run('alice', `cat /workspace/from-host-${tag}.txt`)).toMatchObject({ exitCode: 0, stdout: `host-${tag}\n` });
    });

    it("a user's folders on the host are closed to other host accounts (no group or other permissions)", { timeout: TEST_TIMEOUT_MS }, async () => {
      await fixture.containerOf('alice');
      const paths = fixture.user('alice').request.paths;
      for (const folder of [paths.folder, paths.workspace, paths.home]) {
        const mode = (await stat(folder)).mode & 0o777;
        expect(mode & 0o077, `${folder} has mode ${mode.toString(8)}`).toBe(0);
      }
    });

    it('without a user in the session, the task layout {sandbox_dir}/docker/{task_id}/workspace is used', { timeout: TEST_TIMEOUT_MS }, async () => {
      await expectTaskLayout(fixture, 'task', fixture.taskId, `task-${fixture.runId}`);
    });

    it('with docker_user_sandbox false, a user session still gets the task layout', { timeout: TEST_TIMEOUT_MS }, async () => {
      await expectTaskLayout(fixture, 'legacyUser', fixture.legacyTaskId, `legacy-${fixture.runId}`);
      // And nothing was created under the user's own folder name.
      const session = fixture.user('legacyUser').session!;
      const registry = fixture.resolver('legacy').registry;
      const userFolder = registry.folderName(registry.resolve(session.platform!, session.userId));
      expect(existsSync(path.join(fixture.sandboxDir, 'docker', userFolder))).toBe(false);
    });
  });

  async function expectTaskLayout(fixture: BackendFixture, name: SuiteUserName, taskId: string, tag: string): Promise<void> {
    const request = fixture.user(name).request;
    expect(request.scope.kind).toBe('task');
    // Spelled out literally: existing setups must find their files exactly where they were.
    const folder = path.join(fixture.sandboxDir, 'docker', taskId);
    expect(request.paths.workspace).toBe(path.join(folder, 'workspace'));
    expect(await fixture.run(name, writeBoth(tag))).toMatchObject({ exitCode: 0 });
    await expectFilesAt(path.join(folder, 'workspace'), path.join(folder, 'home'), tag);
  }
}
