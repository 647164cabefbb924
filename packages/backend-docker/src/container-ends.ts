import type { ExecChannel } from '@berth/core/driver';
import { LABELS, MANAGED_BY } from '@berth/sandbox-runtime/driver';
import type Dockerode from 'dockerode';

/** How long after a dropped event stream it is opened again, while channels need it. */
const RECONNECT_MS = 1_000;

/** What tracks the exec channels of containers and ends them when their container ends. */
export interface ContainerEnds {
  /** Ends `channel` when its container dies or is removed; returns it. */
  track(containerId: string, channel: ExecChannel): ExecChannel;
  /** Stops listening. */
  close(): void;
}

/**
 * Ends a container's exec channels when the engine says the container died or was removed. Under
 * runc the engine ends an exec's stream with its container; under gVisor it leaves the stream
 * open (seen: after `docker rm -f`, the session's next command waited out its whole timeout), so
 * the session would hang where it should find its sandbox gone and make it again. One event
 * stream per driver, open only while some exec channel is, for Berth's own containers only.
 */
export function createContainerEnds(docker: Dockerode): ContainerEnds {
  const channels = new Map<string, Set<ExecChannel>>();
  let stream: NodeJS.ReadableStream | undefined;
  let opening = false;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const endAll = (containerId: string): void => {
    const open = channels.get(containerId);
    channels.delete(containerId);
    for (const channel of open ?? []) channel.destroy();
  };

  const stop = (): void => {
    const current = stream as (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;
    stream = undefined;
    current?.destroy?.();
  };

  const listen = (): void => {
    if (stream || opening || closed || channels.size === 0) return;
    opening = true;
    docker
      .getEvents({ filters: { type: ['container'], event: ['die', 'destroy'], label: [`${LABELS.managedBy}=${MANAGED_BY}`] } })
      .then((events) => {
        opening = false;
        if (closed || channels.size === 0) {
          (events as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
          return;
        }
        stream = events;
        let pending = '';
        events.on('data', (chunk: Buffer | string) => {
          pending += chunk.toString();
          let newline = pending.indexOf('\n');
          while (newline >= 0) {
            const line = pending.slice(0, newline).trim();
            pending = pending.slice(newline + 1);
            newline = pending.indexOf('\n');
            if (!line) continue;
            try {
              const event = JSON.parse(line) as { id?: string; Actor?: { ID?: string } };
              const id = event.Actor?.ID ?? event.id;
              if (id) endAll(id);
            } catch {
              // Not an event: ignored.
            }
          }
        });
        const dropped = (): void => {
          if (stream !== events) return;
          stream = undefined;
          if (!closed && channels.size > 0) retry = setTimeout(listen, RECONNECT_MS).unref();
        };
        events.on('end', dropped);
        events.on('close', dropped);
        events.on('error', dropped);
      })
      .catch(() => {
        opening = false;
        if (!closed && channels.size > 0) retry = setTimeout(listen, RECONNECT_MS).unref();
      });
  };

  return {
    track(containerId, channel) {
      if (closed) return channel;
      const open = channels.get(containerId) ?? new Set<ExecChannel>();
      open.add(channel);
      channels.set(containerId, open);
      channel.onClose(() => {
        open.delete(channel);
        if (open.size === 0 && channels.get(containerId) === open) channels.delete(containerId);
        if (channels.size === 0) stop();
      });
      listen();
      return channel;
    },
    close() {
      closed = true;
      clearTimeout(retry);
      channels.clear();
      stop();
    },
  };
}
