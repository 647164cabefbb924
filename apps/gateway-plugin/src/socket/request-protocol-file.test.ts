import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { requestProtocolConstants } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { MAX_SOCKET_PATH_BYTES } from './protocol.js';
import { socketWireContract } from './wire-contract.js';

// The clients in other languages hold the socket's wire contract, written to one JSON file from
// TypeScript: the Python bridge reads that file; the Perl client, which has only perl-base (no
// JSON module) and is shipped without the file, names its values, and is checked against the file here.
const read = (relative: string): string => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), 'utf8');
const { $comment, ...written } = JSON.parse(read('../../../../integrations/hermes/berth_hermes/request_protocol.json')) as Record<string, unknown>;
const contract = written as ReturnType<typeof socketWireContract>;
const perl = read('../../client/berth-socket-client.pl');
// The Perl client's code without its comments.
const perlCode = perl
  .split('\n')
  .filter((line) => !/^\s*#/.test(line))
  .join('\n');

describe('the request protocol outside TypeScript', () => {
  it("the Python bridge's request_protocol.json is the wire contract (else: pnpm exec tsx scripts/write-request-protocol.ts)", () => {
    expect($comment).toMatch(/scripts\/write-request-protocol\.ts/);
    expect(written).toEqual(JSON.parse(JSON.stringify(socketWireContract())));
    expect(written).toMatchObject(requestProtocolConstants());
  });

  it("the Perl client uses the contract's request bound and exit codes", () => {
    const constantOf = (name: string): number => {
      const factors = new RegExp(`^my \\$${name} = ([0-9 *]+);$`, 'm').exec(perl)?.[1];
      expect(factors, `the Perl client names $${name}`).toBeDefined();
      return factors!.split('*').reduce((product, factor) => product * Number(factor.trim()), 1);
    };
    expect(constantOf('MAX_REQUEST_BYTES')).toBe(contract.maxRequestBytes);
    expect(constantOf('BERTH_ERROR_EXIT')).toBe(contract.berthFailureExitCode);
    expect(constantOf('MAX_SOCKET_PATH_BYTES')).toBe(MAX_SOCKET_PATH_BYTES);
    // Every exit is Berth's failure or the status the result carries (124 after a timeout: the
    // runtime decides it once, so the client never derives it from the timed-out flag).
    expect(perl.match(/\bexit\b[^;]*;/g)).toEqual(['exit $BERTH_ERROR_EXIT;', 'exit($status <= 255 ? $status : 1);']);
    expect(perlCode).not.toMatch(/\b124\b|TIMEOUT_EXIT/);
  });

  it("the Perl client reads answers of the contract's protocol version, named once", () => {
    expect(/^my \$PROTOCOL_VERSION = ([0-9]+);$/m.exec(perl)?.[1], 'the Perl client names $PROTOCOL_VERSION').toBe(String(contract.protocolVersion));
    expect(perlCode).not.toMatch(/"v":\d/);
    expect(perlCode).toContain('"v":$PROTOCOL_VERSION,');
  });

  it("the Perl client adds only a field of the contract's command request, and reads its answers as the contract states them", () => {
    // What it adds to the request the host wrote: its input, a string field of a command.
    const added = [...perlCode.matchAll(/s\/\\\}\\z\/,"(\w+)":/g)].map((match) => match[1]);
    expect(added).toEqual(['stdin']);
    expect(contract.requests.exec).toMatchObject({ properties: { stdin: { type: 'string' } } });
    // A framed result's header starts with the contract's tag.
    expect(perlCode).toContain(`$answer =~ /\\A${contract.framedResultTag} ([0-9]{1,3}) ([01]) ([01]) ([0-9]+) ([0-9]+)\\n/`);
    // A refusal: the error answer's fields, in the order JSON.stringify writes them, and a code
    // pattern every code of the contract matches.
    const refusal = /\\A\\\{"v":\$PROTOCOL_VERSION,"error":\\\{"code":"\[([^\]]+)\]\+","message":/.exec(perlCode);
    expect(refusal, 'the Perl client matches a refusal').not.toBeNull();
    expect(contract.answers.error).toMatchObject({
      required: ['v', 'error'],
      properties: { error: { required: ['code', 'message'] } },
    });
    const codePattern = new RegExp(`^[${refusal![1]}]+$`);
    for (const code of contract.errorCodes) expect(code).toMatch(codePattern);
  });
});
