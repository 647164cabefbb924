#!/usr/bin/env node
// Fails when a source file git tracks has more than 350 lines, naming each such file and its line
// count: a file should read in one sitting (issue 40). There is no allow-list; a file over the
// limit is split along its seams.
//
// The rule:
//   - Source: a tracked file whose name ends in .ts, .mts, .cts, .js, .mjs, .cjs, .py, .sh, .bash,
//     .pl or .pm, or a tracked file with no ending at all whose first line is a `#!` naming sh,
//     bash, node, python or perl (such as .ci/run).
//   - Not counted, as tests: a file whose name has `.test.` in it (*.test.ts, *.integration.test.ts,
//     *.attack.test.ts, *.e2e.test.ts, ...); a Python test module (test_*.py, *_test.py) or
//     conftest.py; anything below a folder named `tests`, `test` or `testing` (the test-only
//     packages under tests/, the Hermes bridge's tests/, testkit's test/, and the src/testing/
//     helpers that only tests and benchmarks import).
//   - Lines are counted as `wc -l` counts them (newline characters), in the working tree.
// Run: node scripts/check-sizes.mjs (scripts/test.sh runs it beside the unit tests).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const MAX_LINES = 350;
const SOURCE_ENDING = /\.(?:[mc]?[jt]s|py|sh|bash|pl|pm)$/;
const SCRIPT_LINE = /^#!.*\b(?:sh|bash|node|python3?|perl)\b/;
const TEST_NAME = /\.test\.|^test_.*\.py$|_test\.py$|^conftest\.py$/;
const TEST_FOLDERS = new Set(['tests', 'test', 'testing']);

const root = path.resolve(import.meta.dirname, '..');
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  .split('\0')
  .filter(Boolean);

function readTracked(file) {
  try {
    return readFileSync(path.join(root, file));
  } catch {
    return undefined; // deleted in the working tree, not yet in the index
  }
}

function isTest(file) {
  const parts = file.split('/');
  const name = parts.pop() ?? '';
  return TEST_NAME.test(name) || parts.some((part) => TEST_FOLDERS.has(part));
}

const over = [];
for (const file of tracked) {
  if (isTest(file)) continue;
  const hasEnding = SOURCE_ENDING.test(file);
  if (!hasEnding && path.basename(file).slice(1).includes('.')) continue;
  const content = readTracked(file);
  if (content === undefined) continue;
  if (!hasEnding && !SCRIPT_LINE.test(content.subarray(0, 200).toString('utf8').split('\n')[0] ?? '')) continue;
  let lines = 0;
  for (const byte of content) if (byte === 0x0a) lines += 1;
  if (lines > MAX_LINES) over.push({ file, lines });
}

if (over.length > 0) {
  over.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
  console.error(`check-sizes: ${over.length} source file(s) over ${MAX_LINES} lines; split each along its seams (the rule: scripts/check-sizes.mjs)`);
  for (const { file, lines } of over) console.error(`  ${file}: ${lines} lines`);
  process.exit(1);
}
console.log(`check-sizes: no source file over ${MAX_LINES} lines`);
