// Sums the JSON reports vitest wrote under the given folder into one closing line.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

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
      if (test.status === 'failed') failures.push(`${file.replace(/\.json$/, '')}: ${test.fullName}`);
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
