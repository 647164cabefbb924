import { describe, expect, it } from 'vitest';
import { parseListenAddress } from './listen-address.js';

describe('parseListenAddress', () => {
  it('binds loopback when only a port is given', () => {
    expect(parseListenAddress(':9464')).toEqual({ host: '127.0.0.1', port: 9464 });
  });

  it('reads a host, an IPv6 address in brackets and a name', () => {
    expect(parseListenAddress('0.0.0.0:9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseListenAddress('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    expect(parseListenAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
  });

  it('refuses what is no address', () => {
    for (const text of ['9464', 'localhost', ':', ':65536', 'host:port', '::1:9464', 'a b:1', '-x:1', 'http://h:1']) {
      expect(parseListenAddress(text), text).toBeUndefined();
    }
  });
});
