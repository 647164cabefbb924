import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

// The audit file read back (`berth top`): each sandbox's commands of the last hour and minute,
// and its refusals at a per-user limit, from the lines audit-trail.ts writes. Read from its end,
// at most a budget of bytes at a time, and then only what was appended since (its rotation to
// `{file}.1` followed), so a refresh costs what was written since the last. A line that is not
// the writer's (hand-made, cut, hostile) is skipped; a sandbox name is only ever a key here.

/** MiB read at most per refresh (and at first, of each file): the file's end. */
export const AUDIT_TAIL_MIB = 4;
const AUDIT_TAIL_BYTES = AUDIT_TAIL_MIB * 2 ** 20;
/** Commands kept in memory at most (an hour's at a flood's pace); the oldest go first. */
const MAX_EVENTS = 200_000;
const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/** One sandbox's commands as the audit file tells them. */
export interface AuditTally {
  /** Commands that ran or failed in the last hour (refused ones not counted, as the limits do not count them). */
  readonly lastHour: number;
  /** The same in the last minute (what `user_commands_per_minute` counts). */
  readonly lastMinute: number;
  /** Each per-user limit's code (`USER_RATE_LIMIT`, …) with the time of its latest refusal in the hour, ms. */
  readonly refusals: ReadonlyMap<string, number>;
}

/** What the audit file says now. */
export interface AuditReading {
  /** By sandbox name (the engine's name, as the file records it). */
  readonly tallies: ReadonlyMap<string, AuditTally>;
  /** When set, lines older than this (ms) within the hour were not read (the budget): counts are at least these. */
  readonly coveredSince?: number;
  /** Why the file could not be read (its errno), when it could not; no file yet is no error. */
  readonly error?: string;
}

interface Command {
  readonly time: number;
  readonly sandbox: string;
  readonly refused?: string;
}

/** Parses one audit line into a command, or `undefined` for anything else. */
export function parseAuditCommand(line: string): Command | undefined {
  if (!line.includes('"command"')) return undefined;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null) return undefined;
  const { type, sandbox, time, outcome, reason } = record as Record<string, unknown>;
  if (type !== 'command' || typeof sandbox !== 'string' || typeof time !== 'string') return undefined;
  const at = Date.parse(time);
  if (!Number.isFinite(at)) return undefined;
  if (outcome === 'refused') return { time: at, sandbox, refused: typeof reason === 'string' ? reason : '' };
  return { time: at, sandbox };
}

/** Reads the audit file `file` again and again, each time only what is new. */
export function createAuditTail(file: string, budget = AUDIT_TAIL_BYTES): { read(now?: number): AuditReading } {
  let events: Command[] = [];
  let inode: number | undefined;
  let offset = 0;
  let coveredSince: number | undefined;

  /** Reads `[from, to)` of an open file, whole lines only; returns where the last whole line ended. */
  const consume = (descriptor: number, from: number, to: number, now: number): number => {
    let start = from;
    let skipped = false;
    if (to - start > budget) {
      start = to - budget;
      skipped = true;
    }
    const bytes = Buffer.alloc(to - start);
    let length = 0;
    while (length < bytes.length) {
      const read = readSync(descriptor, bytes, length, bytes.length - length, start + length);
      if (read === 0) break;
      length += read;
    }
    const text = bytes.toString('utf8', 0, length);
    const last = text.lastIndexOf('\n');
    if (last < 0) return skipped ? to : from;
    const lines = text.slice(0, last).split('\n');
    if (skipped) lines.shift(); // Cut by the budget: not a whole line.
    let first: number | undefined;
    for (const line of lines) {
      const command = parseAuditCommand(line);
      if (!command) continue;
      first ??= command.time;
      events.push(command);
    }
    if (skipped) coveredSince = Math.max(coveredSince ?? 0, first ?? now);
    return start + Buffer.byteLength(text.slice(0, last + 1));
  };

  const open = (name: string): number | undefined => {
    try {
      return openSync(name, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };

  /** Reads what is new in `name` whose inode was `known` up to `from`; returns its inode and end. */
  const readFile = (name: string, now: number, known?: { inode: number; from: number }): { inode: number; end: number } | undefined => {
    const descriptor = open(name);
    if (descriptor === undefined) return undefined;
    try {
      const stat = fstatSync(descriptor);
      const from = known && known.inode === stat.ino && stat.size >= known.from ? known.from : 0;
      return { inode: stat.ino, end: consume(descriptor, from, stat.size, now) };
    } finally {
      closeSync(descriptor);
    }
  };

  return {
    read(now = Date.now()) {
      try {
        const descriptor = open(file);
        const stat = descriptor === undefined ? undefined : fstatSync(descriptor);
        if (descriptor !== undefined) closeSync(descriptor);
        let known = inode === undefined ? undefined : { inode, from: offset };
        if (known && stat?.ino !== known.inode) {
          // Moved away since: its rest is `.1` now (else it is gone, and its lines with it).
          const old = readFile(`${file}.1`, now, known);
          known = undefined;
          if (stat === undefined) {
            // Not made again yet: `.1` is the file followed until it is.
            inode = old?.inode;
            offset = old?.end ?? 0;
            return tally(now);
          }
        } else if (!known && stat !== undefined && stat.size < budget) {
          // First reading: the newest old file too, when the current one is young.
          readFile(`${file}.1`, now);
        }
        const read = readFile(file, now, known);
        inode = read?.inode;
        offset = read?.end ?? 0;
      } catch (error) {
        return { tallies: new Map(), error: (error as NodeJS.ErrnoException).code ?? (error as Error).message };
      }
      return tally(now);
    },
  };

  function tally(now: number): AuditReading {
    events = events.filter((event) => event.time > now - HOUR_MS);
    if (events.length > MAX_EVENTS) {
      events = events.slice(events.length - MAX_EVENTS);
      coveredSince = Math.max(coveredSince ?? 0, events[0]!.time);
    }
    const tallies = new Map<string, { lastHour: number; lastMinute: number; refusals: Map<string, number> }>();
    for (const event of events) {
      let counts = tallies.get(event.sandbox);
      if (!counts) {
        counts = { lastHour: 0, lastMinute: 0, refusals: new Map() };
        tallies.set(event.sandbox, counts);
      }
      if (event.refused === undefined) {
        counts.lastHour++;
        if (event.time > now - MINUTE_MS) counts.lastMinute++;
      } else if (event.refused.startsWith('USER_')) counts.refusals.set(event.refused, event.time);
    }
    const since = coveredSince !== undefined && coveredSince > now - HOUR_MS ? coveredSince : undefined;
    return since === undefined ? { tallies } : { tallies, coveredSince: since };
  }
}
