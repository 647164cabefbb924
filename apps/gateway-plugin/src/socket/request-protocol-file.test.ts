import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  BERTH_FAILURE_EXIT_CODE,
  MAX_SANDBOX_SOCKET_REQUEST_BYTES,
  requestProtocolConstants,
  SANDBOX_SOCKET_PROTOCOL_VERSION,
  TIMEOUT_EXIT_CODE,
} from '@berth/core';
import { describe, expect, it } from 'vitest';
import { MAX_SOCKET_PATH_BYTES } from './protocol.js';
import { socketWireContract } from './wire-contract.js';

// The clients in other languages hold core's request protocol as values of their own: the Python
// bridge reads the generated JSON file, the Perl client names them. Both are checked here.
const read = (relative: string): string => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), 'utf8');

describe('the request protocol outside TypeScript', () => {
  it("the Python bridge's request_protocol.json is the wire contract (else: pnpm exec tsx scripts/write-request-protocol.ts)", () => {
    const { $comment, ...written } = JSON.parse(read('../../../../integrations/hermes/berth_hermes/request_protocol.json')) as Record<string, unknown>;
    expect($comment).toMatch(/scripts\/write-request-protocol\.ts/);
    expect(written).toEqual(JSON.parse(JSON.stringify(socketWireContract())));
    expect(written).toMatchObject(requestProtocolConstants());
  });

  it('the Perl client uses the same request bound and exit codes', () => {
    const perl = read('../../client/berth-socket-client.pl');
    const constantOf = (name: string): number => {
      const factors = new RegExp(`^my \\$${name} = ([0-9 *]+);$`, 'm').exec(perl)?.[1];
      expect(factors, `the Perl client names $${name}`).toBeDefined();
      return factors!.split('*').reduce((product, factor) => product * Number(factor.trim()), 1);
    };
    expect(constantOf('MAX_REQUEST_BYTES')).toBe(MAX_SANDBOX_SOCKET_REQUEST_BYTES);
    expect(constantOf('TIMEOUT_EXIT')).toBe(TIMEOUT_EXIT_CODE);
    expect(constantOf('BERTH_ERROR_EXIT')).toBe(BERTH_FAILURE_EXIT_CODE);
    expect(constantOf('MAX_SOCKET_PATH_BYTES')).toBe(MAX_SOCKET_PATH_BYTES);
    // Every exit is one of those, or the command's own status.
    expect(perl.match(/\bexit\b[^;]*;/g)).toEqual(['exit $BERTH_ERROR_EXIT;', 'exit $TIMEOUT_EXIT;', 'exit($status <= 255 ? $status : 1);']);
  });

  it("the Perl client reads answers of core's protocol version, named once", () => {
    const perl = read('../../client/berth-socket-client.pl');
    expect(/^my \$PROTOCOL_VERSION = ([0-9]+);$/m.exec(perl)?.[1], 'the Perl client names $PROTOCOL_VERSION').toBe(String(SANDBOX_SOCKET_PROTOCOL_VERSION));
    const code = perl
      .split('\n')
      .filter((line) => !/^\s*#/.test(line))
      .join('\n');
    expect(code).not.toMatch(/"v":\d/);
    expect(code).toContain('"v":$PROTOCOL_VERSION,');
  });
});
