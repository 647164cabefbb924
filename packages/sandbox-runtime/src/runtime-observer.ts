import type { HostLogger, SandboxRequest } from '@berth/core';
import type { AuditedCommand, AuditEvent } from './audit/audit-trail.js';
import type { DiskUsage } from './lifecycle/inventory.js';
import type { SandboxEntry } from './lifecycle/sandbox-entry.js';
import type { SharedBound } from './lifecycle/shared-bound.js';
import type { SandboxSettings } from './sandbox-settings.js';

/**
 * What watches a runtime: told of every command and every sandbox event at the one place each
 * happens. The audit trail is one observer, metrics (metrics/runtime-metrics.ts) another, so
 * both see the same events from the same call sites.
 */
export interface RuntimeObserver {
  /** One command of `entry`'s sandbox, once it ran, was refused or failed. */
  command(entry: SandboxEntry, request: SandboxRequest, command: AuditedCommand): void;
  /** What happened to `entry`'s sandbox, and why. */
  event(entry: SandboxEntry, event: AuditEvent, reason?: string): void;
  /** Called once by the runtime it observes, with what it may read whenever it likes (a metrics scrape). */
  attach?(view: RuntimeView): void;
}

/** What an observer may read of its runtime at any time; nothing here asks the engine more than once. */
export interface RuntimeView {
  readonly settings: SandboxSettings;
  /** The sandboxes this process knows (made, started, adopted), from memory: no engine call. */
  sandboxes(): Iterable<SandboxEntry>;
  /** The cap on running sandboxes the settings mean on the engine's host (0: none); `auto` asks the engine's size once. */
  runningCap(): Promise<number>;
  /** The shared bound, once made for the first sandbox; `undefined` before (asking makes nothing). */
  bound(): Promise<SharedBound | undefined>;
  /** A reader of sandboxes' own disks for one scrape (the mount table read once); `undefined` for none. */
  disks?(): (entry: SandboxEntry) => DiskUsage | undefined;
}

/** One observer over several: each is told in turn, and one that throws is logged, never a command's failure. */
export function observeAll(observers: readonly (RuntimeObserver | undefined)[], logger: HostLogger | undefined): RuntimeObserver {
  const present = observers.filter((observer): observer is RuntimeObserver => observer !== undefined);
  const each = (call: (observer: RuntimeObserver) => void): void => {
    for (const observer of present) {
      try {
        call(observer);
      } catch (error) {
        logger?.warn(`berth: an observer of the runtime failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  return {
    command: (entry, request, command) => each((observer) => observer.command(entry, request, command)),
    event: (entry, event, reason) => each((observer) => observer.event(entry, event, reason)),
    attach: (view) => each((observer) => observer.attach?.(view)),
  };
}
