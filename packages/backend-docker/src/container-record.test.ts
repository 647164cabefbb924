import { describe, expect, it } from 'vitest';
import { readTopListing } from './container-record.js';

describe("the engine's process listing (top)", () => {
  it('reads the command lines and each process with its parent and group, by the column titles', () => {
    const listed = readTopListing({
      Titles: ['PID', 'PPID', 'PGID', 'COMMAND'],
      Processes: [
        ['4100', '4090', '4100', '/sbin/docker-init -- /bin/sh -c trap'],
        ['4120', '4100', '4100', 'sleep 3600'],
      ],
    });
    expect(listed).toEqual({
      commands: ['/sbin/docker-init -- /bin/sh -c trap', 'sleep 3600'],
      ids: [
        { pid: 4100, ppid: 4090, pgid: 4100 },
        { pid: 4120, ppid: 4100, pgid: 4100 },
      ],
    });
  });

  it("reads Podman's listing, whose titles and lines come whole, the command line keeping its spaces", () => {
    const listed = readTopListing({
      Titles: ['PID   PPID  PGID  COMMAND'],
      Processes: [['    1     0     1 /bin/sh -c trap "exit 0" TERM'], ['    6     1     1 sleep 3600']],
    });
    expect(listed).toEqual({
      commands: ['/bin/sh -c trap "exit 0" TERM', 'sleep 3600'],
      ids: [
        { pid: 1, ppid: 0, pgid: 1 },
        { pid: 6, ppid: 1, pgid: 1 },
      ],
    });
    // The older listing (pid and command line only): the command line without its id.
    expect(readTopListing({ Titles: ['PID   COMMAND'], Processes: [['    6 sleep 3600']] })).toEqual({ commands: ['sleep 3600'] });
  });

  it('gives the command lines alone when an id column is missing or not numbers, so nothing is guessed', () => {
    expect(readTopListing({ Titles: ['PID', 'PPID', 'CMD'], Processes: [['1', '0', 'sleep 3600']] })).toEqual({ commands: ['sleep 3600'] });
    expect(readTopListing({ Titles: ['PID', 'PPID', 'PGID', 'ARGS'], Processes: [['1', 'x', '1', 'sleep 3600']] })).toEqual({ commands: ['sleep 3600'] });
    expect(readTopListing({})).toEqual({ commands: [] });
  });
});
