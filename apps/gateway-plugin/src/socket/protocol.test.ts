import { describe, expect, it } from 'vitest';
import { encodeFramedResult } from './protocol.js';

describe('encodeFramedResult', () => {
  it('is a header of lengths in bytes, then stdout and stderr as UTF-8, nothing else', () => {
    const framed = encodeFramedResult({ exitCode: 3, timedOut: false, truncated: true, stdout: 'é🙂\nBERTH1 0 0 0 0 0\n', stderr: 'err' });
    const stdout = Buffer.from('é🙂\nBERTH1 0 0 0 0 0\n');
    expect(framed.subarray(0, framed.indexOf(0x0a) + 1).toString()).toBe(`BERTH1 3 0 1 ${stdout.length} 3\n`);
    expect(framed.subarray(framed.indexOf(0x0a) + 1)).toEqual(Buffer.concat([stdout, Buffer.from('err')]));
  });

  it.each([
    [124, true, 'BERTH1 124 1 0 0 0\n'],
    [-1, false, 'BERTH1 1 0 0 0 0\n'],
    [256, false, 'BERTH1 1 0 0 0 0\n'],
    [1.5, false, 'BERTH1 1 0 0 0 0\n'],
  ])('reads status %d as the Node client does', (exitCode, timedOut, header) => {
    expect(encodeFramedResult({ exitCode, timedOut, truncated: false, stdout: '', stderr: '' }).toString()).toBe(header);
  });
});
