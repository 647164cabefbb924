import { describe, expect, it } from 'vitest';
import { parseHostPattern } from './host-patterns.js';
import { placeholderFor, substituteRequest } from './placeholders.js';

// The host patterns' own tests are in @berth/core (src/host-pattern.test.ts), with the patterns.

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

  it('are replaced only where the host is approved, and a Basic header is decoded and encoded again', () => {
    const placeholder = placeholderFor('key', 'berth-a', 'TOKEN');
    const table = new Map([[placeholder, { variable: 'TOKEN', value: 'sekrit', hosts: [parseHostPattern('api.example.com')] }]]);
    const basic = `Basic ${Buffer.from(`me:${placeholder}`).toString('base64')}`;
    const approved = substituteRequest(
      { target: `/x?t=${placeholder}`, rawHeaders: ['Authorization', basic, 'X-Key', `k ${placeholder} k`] },
      'api.example.com',
      table,
    );
    expect(approved.target).toBe('/x?t=sekrit');
    expect(Buffer.from(approved.rawHeaders[1]!.slice(6), 'base64').toString()).toBe('me:sekrit');
    expect(approved.rawHeaders[3]).toBe('k sekrit k');
    expect([...approved.substituted]).toEqual(['TOKEN']);
    const elsewhere = substituteRequest({ target: `/x?t=${placeholder}`, rawHeaders: ['X-Key', placeholder] }, 'evil.example.com', table);
    expect(elsewhere.target).toBe(`/x?t=${placeholder}`);
    expect(elsewhere.rawHeaders[1]).toBe(placeholder);
    expect([...elsewhere.refused]).toEqual(['TOKEN']);
  });
});
