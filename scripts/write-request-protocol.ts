// Writes integrations/hermes/berth_hermes/request_protocol.json from core's request protocol
// (packages/core/src/request-protocol.ts): the Python bridge reads its limits there. Run it after
// changing one of them:
//   pnpm exec tsx scripts/write-request-protocol.ts
// apps/gateway-plugin/src/socket/request-protocol-file.test.ts fails while the file is stale.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { requestProtocolConstants } from '../packages/core/src/request-protocol.ts';

const file = path.resolve(import.meta.dirname, '..', 'integrations', 'hermes', 'berth_hermes', 'request_protocol.json');
const text = {
  $comment: 'Written from packages/core/src/request-protocol.ts by scripts/write-request-protocol.ts; do not edit.',
  ...requestProtocolConstants(),
};
writeFileSync(file, `${JSON.stringify(text, null, 2)}\n`);
console.log(`wrote ${path.relative(process.cwd(), file)}`);
