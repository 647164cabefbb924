import { describe, expect, it } from 'vitest';
import { HeadError, parseRequestHead, parseResponseHead } from './http-head.js';
import { requestFraming, responseFraming } from './message-framing.js';

const head = (text: string) => Buffer.from(text, 'latin1');
const request = (lines: string) => parseRequestHead(head(`GET / HTTP/1.1\r\nHost: x.test\r\n${lines}\r\n`));

describe('message heads as the proxy reads them', () => {
  it('refuse anything a recipient could read two ways', () => {
    for (const bad of [
      'GET / HTTP/1.1\nHost: x\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n',
      'GET / HTTP/1.1\r\nHost : x\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n',
      'GET  / HTTP/1.1\r\n\r\n',
      'GET / HTTP/2\r\n\r\n',
      'GET / HTTP/1.1\r\nX: a\0b\r\n\r\n',
    ]) {
      expect(() => parseRequestHead(head(bad)), JSON.stringify(bad)).toThrow(HeadError);
    }
    expect(() => parseResponseHead(head('HTTP/1.1 2000 OK\r\n\r\n'))).toThrow(HeadError);
  });

  it('frame a request by Content-Length or chunked alone, and refuse both, two lengths, or another coding', () => {
    expect(requestFraming(request(''))).toEqual({ kind: 'none' });
    expect(requestFraming(request('Content-Length: 5\r\n'))).toEqual({ kind: 'length', length: 5 });
    expect(requestFraming(request('Transfer-Encoding: Chunked\r\n'))).toEqual({ kind: 'chunked' });
    for (const bad of [
      'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n',
      'Content-Length: 5\r\nContent-Length: 5\r\n',
      'Content-Length: 5, 5\r\n',
      'Content-Length: +5\r\n',
      'Transfer-Encoding: gzip, chunked\r\n',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n',
    ]) {
      expect(() => requestFraming(request(bad)), bad).toThrow(HeadError);
    }
  });

  it('frame a response by its status and the request method, else by its headers, else by the close', () => {
    const response = (lines: string, status = 200) => parseResponseHead(head(`HTTP/1.1 ${status} X\r\n${lines}\r\n`));
    expect(responseFraming(response('Content-Length: 9\r\n'), 'HEAD')).toEqual({ kind: 'none' });
    expect(responseFraming(response('', 304), 'GET')).toEqual({ kind: 'none' });
    expect(responseFraming(response('Content-Length: 9\r\n'), 'GET')).toEqual({ kind: 'length', length: 9 });
    expect(responseFraming(response(''), 'GET')).toEqual({ kind: 'close' });
    expect(() => responseFraming(response('Transfer-Encoding: chunked\r\nContent-Length: 9\r\n'), 'GET')).toThrow(HeadError);
  });
});
