// Writes integrations/hermes/berth_hermes/request_protocol.json, the wire contract of berth serve's
// socket, from TypeScript (apps/gateway-plugin/src/socket/wire-contract.ts): core's request
// protocol (packages/core/src/request-protocol.ts), the session variables, the error codes, and
// each request and answer as JSON Schema from the zod schemas the server uses. The Python bridge
// reads it; the Perl client is tested against it. Run it, once core is built, after changing one
// of them:
//   pnpm exec tsx scripts/write-request-protocol.ts
// apps/gateway-plugin/src/socket/request-protocol-file.test.ts fails while the file is stale.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { socketWireContract } from '../apps/gateway-plugin/src/socket/wire-contract.ts';

const file = path.resolve(import.meta.dirname, '..', 'integrations', 'hermes', 'berth_hermes', 'request_protocol.json');
const text = {
  $comment: 'Written from apps/gateway-plugin/src/socket/wire-contract.ts by scripts/write-request-protocol.ts; do not edit.',
  ...socketWireContract(),
};
writeFileSync(file, `${JSON.stringify(text, null, 2)}\n`);
console.log(`wrote ${path.relative(process.cwd(), file)}`);
