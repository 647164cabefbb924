import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubernetesRole } from './kubernetes-role.js';

describe('the Role an operator pastes', () => {
  it('is, in docs/backend-kubernetes.md, exactly the Role the tests run the driver under', async () => {
    const docs = await readFile(path.join(import.meta.dirname, '..', '..', '..', 'docs', 'backend-kubernetes.md'), 'utf8');
    const block = /```yaml\n(# The Role[\s\S]*?)```/.exec(docs)?.[1];
    expect(block, 'a ```yaml block starting "# The Role" in docs/backend-kubernetes.md').toBeDefined();
    const documents = block!.split(/^---$/m).map((part) => parse(part) as { kind?: string });
    expect(documents.find((document) => document.kind === 'Role')).toEqual(kubernetesRole('berth'));
  });
});
