// Sums the JSON reports vitest wrote under the given folder into one closing line.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The first lines of a failure's message, on one indented line: CI keeps only the end of a run's
 * output, and a failure that cannot be reproduced is understood from this line or not at all.
 */
function reasonOf(test) {
  const message = (test.failureMessages ?? [])[0];
  if (!message) return '';
  const lines = message
    // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal colours in vitest's messages
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('at '));
  // The message's first line, and vitest's "expected … to …" (after a message's own lines, logs among them).
  const expected = lines.find((line, index) => index > 0 && /\bexpected\b/.test(line));
  const reason = [lines[0], expected ?? lines[1]].filter(Boolean).join(' | ');
  return `\n    ${reason.length > 400 ? `${reason.slice(0, 400)}…` : reason}`;
}

const folder = process.argv[2] ?? '.test-results';
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
for (const file of readdirSync(folder)
  .filter((name) => name.endsWith('.json'))
  .sort()) {
  const report = JSON.parse(readFileSync(path.join(folder, file), 'utf8'));
  passed += report.numPassedTests ?? 0;
  failed += report.numFailedTests ?? 0;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  for (const suite of report.testResults ?? []) {
    for (const test of suite.assertionResults ?? []) {
      if (test.status === 'failed') failures.push(`${file.replace(/\.json$/, '')}: ${test.fullName}${reasonOf(test)}`);
    }
    if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0) {
      failed += 1;
      failures.push(`${file.replace(/\.json$/, '')}: ${path.basename(suite.name)} failed to load: ${(suite.message ?? '').split('\n')[0]}`);
    }
  }
}
for (const failure of failures) console.log(`FAILED ${failure}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
