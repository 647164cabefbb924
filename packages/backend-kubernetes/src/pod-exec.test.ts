import { describe, expect, it } from 'vitest';
import { readPodListing } from './pod-exec.js';

describe("the busy check's listing of a pod", () => {
  const marker = 'berth-busy-0a1b2c3d';
  // What the listing prints in an idle pod: pause, the launcher, its sleep, a session's shell, and
  // its own command line, which holds the words it prints when a command runs.
  const own = `/bin/sh -c for p in /proc/[0-9]*; do [ -r "$p/cmdline" ] && { tr '\\0\\n' '  ' < "$p/cmdline"; echo; }; done; if (probe); then echo ${marker}-running; fi; : ${marker}`;
  const idle = ['/pause ', '/bin/sh -c trap "exit 0" TERM INT HUP; sleep 3600 & wait ', 'sleep 3600 ', '/bin/sh ', `${own} `, 'tr \\0\\n   '].join('\n');

  it('does not take its own command line for a command running, nor list itself', () => {
    const read = readPodListing(`${idle}\n`, marker);
    expect(read.running).toBe(false);
    expect(read.commands).toEqual(['/pause', '/bin/sh -c trap "exit 0" TERM INT HUP; sleep 3600 & wait', 'sleep 3600', '/bin/sh']);
  });

  it('says a command runs when the probe printed its line', () => {
    expect(readPodListing(`${idle}\n${marker}-running\n`, marker).running).toBe(true);
  });
});
