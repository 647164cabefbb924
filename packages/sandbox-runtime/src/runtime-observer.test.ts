import { describe, expect, it } from 'vitest';
import { observeAll, type RuntimeObserver } from './runtime-observer.js';

// Observers are told in turn; one that throws is logged and never stops the others or a command.
describe('observeAll', () => {
  it('tells every observer, and logs one that throws instead of failing', () => {
    const seen: string[] = [];
    const logged: string[] = [];
    const throwing: RuntimeObserver = {
      command: () => {
        throw new Error('disk full');
      },
      event: () => seen.push('first event'),
    };
    const counting: RuntimeObserver = { command: () => seen.push('second command'), event: () => seen.push('second event') };
    const observer = observeAll([throwing, undefined, counting], { info: () => undefined, warn: (line) => logged.push(line), error: () => undefined });
    observer.command({} as never, {} as never, { command: 'true', outcome: 'ran', durationMs: 1 });
    observer.event({} as never, 'created');
    expect(seen).toEqual(['second command', 'first event', 'second event']);
    expect(logged).toEqual(['berth: an observer of the runtime failed: disk full']);
  });
});
