import { describe, expect, it } from 'vitest';
import { createRefusalLog } from './refusal-log.js';

describe('the refusal log', () => {
  it('logs each refused thing once, at most 30 lines a minute, and says how many it left out', () => {
    const lines: string[] = [];
    let now = 0;
    const log = createRefusalLog({ warn: (line) => lines.push(line) }, () => now);
    for (let index = 0; index < 1_000; index++) log.warn(`deny s name${index}`, `refused name${index}`);
    log.warn('deny s name0', 'refused name0 again');
    expect(lines).toHaveLength(30);
    now = 61_000;
    log.warn('deny s late', 'refused late');
    expect(lines.slice(30)).toEqual(['berth: egress proxy: 970 more refusal(s) in the last minute were not logged one by one', 'refused late']);
  });
});
