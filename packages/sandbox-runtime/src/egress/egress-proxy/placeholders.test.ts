import { describe, expect, it } from 'vitest';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor, substituteRequest } from './placeholders.js';

describe('placeholders', () => {
  it('are the same for a sandbox and variable, and differ between sandboxes, variables and installations', () => {
    const one = placeholderFor('key', 'berth-a', 'GITHUB_TOKEN');
    expect(one).toMatch(/^berth_secret_[0-9a-f]{32}$/);
    expect(placeholderFor('key', 'berth-a', 'GITHUB_TOKEN')).toBe(one);
    expect(
      new Set([
        one,
        placeholderFor('key', 'berth-b', 'GITHUB_TOKEN'),
        placeholderFor('key', 'berth-a', 'NPM_TOKEN'),
        placeholderFor('other', 'berth-a', 'GITHUB_TOKEN'),
      ]).size,
    ).toBe(4);
  });

  it('are replaced only where credentials go for an approved host and port, and a Basic header is decoded and encoded again', () => {
    const placeholder = placeholderFor('key', 'berth-a', 'TOKEN');
    const table = new Map([
      [placeholder, { variable: 'TOKEN', value: 'sekrit', hosts: [parseHostPattern('api.example.com')], headers: ['x-key'], query: ['t'] }],
    ]);
    const basic = `Basic ${Buffer.from(`me:${placeholder}`).toString('base64')}`;
    const approved = substituteRequest(
      {
        target: `/p/${placeholder}?t=${placeholder}&u=${placeholder}`,
        rawHeaders: ['Authorization', basic, 'X-Key', `k ${placeholder} k`, 'X-Other', placeholder],
      },
      'api.example.com',
      table,
    );
    // The path and an unnamed parameter or header keep the placeholder.
    expect(approved.target).toBe(`/p/${placeholder}?t=sekrit&u=${placeholder}`);
    expect(Buffer.from(approved.rawHeaders[1]!.slice(6), 'base64').toString()).toBe('me:sekrit');
    expect(approved.rawHeaders.slice(2)).toEqual(['X-Key', 'k sekrit k', 'X-Other', placeholder]);
    expect([...approved.substituted]).toEqual(['TOKEN']);
    expect([...approved.refused]).toEqual(['TOKEN']);
    // Masking gets back the placeholder for the value, the sandbox's own base64 for the one the proxy made.
    expect(approved.forms).toContainEqual({ secret: 'sekrit', replacement: placeholder });
    expect(approved.forms).toContainEqual({ secret: approved.rawHeaders[1]!.slice(6), replacement: basic.slice(6) });
    const elsewhere = substituteRequest({ target: `/x?t=${placeholder}`, rawHeaders: ['Authorization', placeholder] }, 'evil.example.com', table);
    expect(elsewhere.target).toBe(`/x?t=${placeholder}`);
    expect(elsewhere.rawHeaders[1]).toBe(placeholder);
    expect([...elsewhere.refused]).toEqual(['TOKEN']);
    // Port 443 unless the variable names others.
    expect(substituteRequest({ target: '/', rawHeaders: ['Authorization', placeholder] }, 'api.example.com', table, 8443).rawHeaders[1]).toBe(placeholder);
  });

  it("drop a client's own value where a brokered value goes, a second such header, and everything when Host names another host", () => {
    const placeholder = placeholderFor('key', 'berth-a', 'TOKEN');
    const table = new Map([[placeholder, { variable: 'TOKEN', value: 'sekrit', hosts: [parseHostPattern('api.example.com')], query: ['key'] }]]);
    const beside = substituteRequest(
      {
        target: '/?key=mine',
        rawHeaders: ['Authorization', 'Bearer mine', 'authorization', `Bearer ${placeholder}`, 'AUTHORIZATION', `Bearer ${placeholder}`],
      },
      'api.example.com',
      table,
    );
    expect(beside.rawHeaders).toEqual(['authorization', 'Bearer sekrit']);
    expect(beside.target).toBe('/');
    expect(beside.dropped).toEqual(['authorization', 'authorization', '?key']);
    const forged = substituteRequest({ target: '/', rawHeaders: ['Host', 'evil.example.com', 'Authorization', placeholder] }, 'api.example.com', table);
    expect(forged.rawHeaders[3]).toBe(placeholder);
  });
});
