import { describe, expect, it } from 'vitest';
import { createPlatformRegistry } from './platform-registry.js';
import { taskScope } from './scope.js';
import golden from './golden-vectors.json' with { type: 'json' };

/*
 * Golden vectors: the folder and env forms of real-looking ids, checked in. A release that
 * changes any of them would move users' files or break operators' variables, so this test
 * must never be "fixed" by editing the table; change the code back instead.
 */
describe('golden vectors', () => {
  const registry = createPlatformRegistry();
  for (const vector of golden.users) {
    it(`${vector.platform}:${vector.id} -> ${vector.folder}`, () => {
      const identity = { platform: vector.platform, id: vector.id };
      expect(registry.folderName(identity)).toBe(vector.folder);
      expect(registry.envName(identity)).toBe(vector.env);
    });
  }
  for (const vector of golden.tasks) {
    it(`task ${JSON.stringify(vector.taskId)} -> ${vector.folder}`, () => {
      expect(taskScope(vector.taskId).folderName).toBe(vector.folder);
    });
  }
});
