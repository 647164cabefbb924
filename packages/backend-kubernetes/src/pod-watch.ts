import { Watch, type CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';

/** A live exec channel's Pod: it ends when that Pod (that uid) goes away, is replaced, or restarts its container. */
interface Watched {
  readonly name: string;
  readonly uid: string;
  readonly restarts: number;
  readonly gone: () => void;
}

/** What ended a Pod for its channels; `undefined` while it lives on. */
export function podEnded(pod: V1Pod | undefined, watched: { uid: string; restarts: number }, deleted = false): string | undefined {
  if (!pod) return 'the pod is gone';
  if (pod.metadata?.uid !== watched.uid) return 'the pod was replaced';
  if (deleted) return 'the pod was deleted';
  if (pod.metadata?.deletionTimestamp) return 'the pod is being deleted';
  const status = pod.status?.containerStatuses?.[0];
  if (status && status.restartCount > watched.restarts) return 'its container restarted';
  if (status?.state?.terminated) return 'its container ended';
  return undefined;
}

/**
 * One watch on Berth's Pods in the namespace, for every open exec channel. Over dockershim an
 * exec whose stdin is open never ends when its Pod is deleted (the socket stays open, the
 * process is gone), so a channel cannot learn it from its socket: the watch tells it. Started
 * with the first channel, stopped with the last; after each (re)start, every channel's Pod is
 * read once, so a deletion between two watches is not missed.
 */
export class PodWatch {
  private readonly watched = new Set<Watched>();
  private abort: AbortController | undefined;
  private starting = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: { kubeConfig: KubeConfig; core: CoreV1Api; namespace: string; labelSelector: string }) {}

  /** Calls `gone` once when the Pod `name` with `uid` ends; returns the function that stops watching it. */
  add(entry: Watched): () => void {
    this.watched.add(entry);
    this.ensureRunning();
    return () => {
      this.watched.delete(entry);
      if (this.watched.size === 0) this.stop();
    };
  }

  close(): void {
    this.closed = true;
    this.stop();
    this.watched.clear();
  }

  private end(entry: Watched): void {
    if (!this.watched.delete(entry)) return;
    entry.gone();
    if (this.watched.size === 0) this.stop();
  }

  private stop(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.abort?.abort();
    this.abort = undefined;
  }

  private ensureRunning(): void {
    if (this.closed || this.abort || this.starting) return;
    this.starting = true;
    const { namespace, labelSelector } = this.options;
    new Watch(this.options.kubeConfig)
      .watch(
        `/api/v1/namespaces/${namespace}/pods`,
        { labelSelector },
        (phase: string, pod: V1Pod) => {
          for (const entry of [...this.watched]) {
            if (pod?.metadata?.name !== entry.name) continue;
            if (podEnded(pod, entry, phase === 'DELETED' && pod.metadata?.uid === entry.uid)) this.end(entry);
          }
        },
        () => {
          // The watch ended (a timeout, a dropped connection): start again while channels need it.
          this.abort = undefined;
          if (!this.closed && this.watched.size > 0) {
            this.retryTimer = setTimeout(() => this.ensureRunning(), 500);
            this.retryTimer.unref();
          }
        },
      )
      .then(
        (abort) => {
          this.starting = false;
          if (this.closed || this.watched.size === 0) {
            abort.abort();
            return;
          }
          this.abort = abort;
          void this.recheck();
        },
        () => {
          this.starting = false;
          if (!this.closed && this.watched.size > 0) {
            this.retryTimer = setTimeout(() => this.ensureRunning(), 1_000);
            this.retryTimer.unref();
          }
        },
      );
  }

  /** Reads each watched Pod once: what happened while no watch was running. */
  private async recheck(): Promise<void> {
    for (const entry of [...this.watched]) {
      try {
        const pod = await this.options.core.readNamespacedPod({ name: entry.name, namespace: this.options.namespace });
        if (podEnded(pod, entry)) this.end(entry);
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) this.end(entry);
      }
    }
  }
}
