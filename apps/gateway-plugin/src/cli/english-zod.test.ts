import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The hook works on Node's own module loader, so each case runs in a Node of its own, as the CLI does.
const here = path.dirname(fileURLToPath(import.meta.url));
const hook = path.join(here, 'english-zod.ts');
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function runNode(program: string, folder = here): unknown {
  const file = path.join(folder, `.english-zod-${process.pid}-${folders.length}.mjs`);
  writeFileSync(file, program);
  try {
    return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', file], { cwd: here, encoding: 'utf8' }));
  } finally {
    rmSync(file, { force: true });
  }
}

const probe = (hooked: boolean) => `
${hooked ? `const { loadZodInEnglishOnly } = await import(${JSON.stringify(hook)}); loadZodInEnglishOnly();` : ''}
const { z } = await import('zod');
const failed = z.object({ port: z.number() }).safeParse({ port: 'x' });
console.log(JSON.stringify({ locales: Object.keys(z.locales), message: failed.error.issues[0].message }));
`;

describe('loadZodInEnglishOnly', () => {
  it("loads zod's English locale alone, and zod still says what is wrong in English", () => {
    expect(runNode(probe(true))).toEqual({ locales: ['en'], message: 'Invalid input: expected number, received string' });
  });

  it('changes nothing when not called (the plugin in a host loads zod whole)', () => {
    const whole = runNode(probe(false)) as { locales: string[]; message: string };
    expect(whole.locales.length).toBeGreaterThan(10);
    expect(whole.message).toBe('Invalid input: expected number, received string');
  });

  it('loads an index of any other shape as it is (a later zod)', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'berth-zod-'));
    folders.push(folder);
    const locales = path.join(folder, 'node_modules', 'zod', 'v4', 'locales');
    mkdirSync(locales, { recursive: true });
    writeFileSync(path.join(locales, 'en.js'), 'export default () => "en";\n');
    writeFileSync(path.join(locales, 'de.js'), 'export default () => "de";\n');
    writeFileSync(
      path.join(locales, 'index.js'),
      'export { default as en } from "./en.js";\nexport { default as de } from "./de.js";\nexport const extra = 1;\n',
    );
    const index = JSON.stringify(path.join(locales, 'index.js'));
    const program = `const { loadZodInEnglishOnly } = await import(${JSON.stringify(hook)}); loadZodInEnglishOnly();
const index = await import(${index});
console.log(JSON.stringify(Object.keys(index).sort()));`;
    expect(runNode(program, folder)).toEqual(['de', 'en', 'extra']);
    // The same index without the line of another shape is cut to English.
    writeFileSync(path.join(locales, 'index.js'), 'export { default as en } from "./en.js";\nexport { default as de } from "./de.js";\n');
    expect(runNode(program, folder)).toEqual(['en']);
  });
});
