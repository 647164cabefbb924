/**
 * A persistent `/bin/sh` over ONE Kubernetes exec WebSocket, for the spike. On Kubernetes 1.20
 * only `v4.channel.k8s.io` is spoken, and there ending stdin closes the whole socket (output and
 * exit code lost), so stdin is never ended: every message is a header line with byte lengths,
 * followed by exactly that many bytes, read inside the sandbox with `head -c`. The shell's program
 * is a constant passed as the exec's argv (the API server records request URLs; no variable
 * ever goes there): variables arrive as the first framed message.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';

/** The socket client-node's Exec gives back (the `ws` package's WebSocket). */
type WebSocket = Awaited<ReturnType<Exec['exec']>>;

/** What one command gives back. */
export interface CommandResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly milliseconds: number;
}

/**
 * The loop the exec runs. `$1` is the state folder. Messages: `E <id> <length> -` (a state file:
 * export lines and the directory), `R <id> <length> <input length or ->` (a command, then its
 * input). Each command runs in a child with its own process group (setsid), stdin from its
 * framed input or /dev/null, and is framed by a start and an end marker on both streams.
 * `head -c N` is not exact on a pipe everywhere (busybox reads whole 4 KiB blocks and drops
 * what is past N), so nothing is ever sent beyond the message being read: a command's input
 * goes only after the shell asks for it (`__BERTH_<id>_I__`), and the next message only after
 * the previous one's end marker.
 */
export const SESSION_PROGRAM = String.raw`umask 077
d=$1
mkdir -p "$d" || exit 97
if command -v setsid >/dev/null 2>&1; then ss=1; else ss=0; fi
child='if [ -s "$0/state" ]; then . "$0/state"; fi
cd -- "$__BERTH_CWD" 2>/dev/null; unset __BERTH_CWD
trap '"'"'__BERTH_CWD=$PWD; export __BERTH_CWD; export -p > "$0/state"'"'"' EXIT
. "$0/cmd"'
printf '__BERTH_READY_%s\n' "$ss"
while IFS=' ' read -r kind id length input; do
  case "$kind" in
    E) head -c "$length" > "$d/state"; printf '__BERTH_%s_S__\n\n__BERTH_%s_E_0\n' "$id" "$id" ;;
    R)
      head -c "$length" > "$d/cmd"
      if [ "$input" = - ]; then i=/dev/null; else printf '__BERTH_%s_I__\n' "$id"; head -c "$input" > "$d/in"; i="$d/in"; fi
      printf '__BERTH_%s_S__\n' "$id"; printf '__BERTH_%s_S__\n' "$id" >&2
      if [ "$ss" = 1 ]; then setsid /bin/sh -c "$child" "$d" < "$i" & else /bin/sh -c "$child" "$d" < "$i" & fi
      p=$!; echo "$p $ss" > "$d/pid"; echo "$p $ss" > "$d/last"; wait "$p"; s=$?; : > "$d/pid"
      printf '\n__BERTH_%s_E_%s\n' "$id" "$s"; printf '\n__BERTH_%s_E_%s\n' "$id" "$s" >&2 ;;
    *) exit 98 ;;
  esac
done`;

/**
 * The killer's loop, on a second exec: for each `<state folder> <pid|last>` line it reads, it
 * stops and kills the running (or the last) command's process group and every descendant found
 * through /proc. Builtins only (`kill`, `read`, globbing), so it still works when the sandbox
 * has no pid left to fork. `last` ends what a command left behind after it returned (a fork
 * bomb's children, once the shell that started them gave up).
 */
export const KILLER_PROGRAM = `while IFS=' ' read -r d which; do
  if read -r p ss < "$d/$which" 2>/dev/null && [ -n "$p" ]; then
    [ "$ss" = 1 ] && kill -STOP "-$p" 2>/dev/null
    all=" $p "; more=1
    while [ "$more" = 1 ]; do
      more=0
      for f in /proc/[0-9]*/stat; do
        read -r l < "$f" 2>/dev/null || continue
        pid=\${l%% *}; set -- \${l##*) }
        case "$all" in *" $2 "*) case "$all" in *" $pid "*) ;; *) all="$all$pid "; more=1; kill -STOP "$pid" 2>/dev/null ;; esac ;; esac
      done
    done
    [ "$ss" = 1 ] && kill -KILL "-$p" 2>/dev/null
    for pid in $all; do kill -KILL "$pid" 2>/dev/null; done
  fi
  echo "killed $d"
done`;

const quote = (value: string): string => `'${value.replaceAll("'", `'\\''`)}'`;

/** Collects one stream's text and hands out the part between a command's two markers. */
class MarkedStream {
  private text = '';
  private waiters: Array<() => void> = [];

  append(chunk: Buffer): void {
    this.text += chunk.toString('utf8');
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Waits for `id`'s end marker; gives the text between the markers and the status. */
  async take(id: string, signal: AbortSignal): Promise<{ body: string; status: number }> {
    const start = `__BERTH_${id}_S__\n`;
    const end = new RegExp(`\\n__BERTH_${id}_E_(\\d+)\\n`);
    for (;;) {
      const from = this.text.indexOf(start);
      if (from >= 0) {
        const match = end.exec(this.text.slice(from + start.length));
        if (match) {
          const body = this.text.slice(from + start.length, from + start.length + match.index);
          this.text = this.text.slice(from + start.length + match.index + match[0].length);
          return { body, status: Number(match[1]) };
        }
      }
      if (signal.aborted) throw new Error(`the session ended before command ${id} finished`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }

  async waitFor(pattern: RegExp, signal: AbortSignal): Promise<RegExpExecArray> {
    for (;;) {
      const match = pattern.exec(this.text);
      if (match) {
        this.text = this.text.slice(match.index + match[0].length);
        return match;
      }
      if (signal.aborted) throw new Error('the session ended before it was ready');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }
}

/** Opens an exec WebSocket whose stdin is never ended; gives the socket and its streams. */
export async function openExec(config: KubeConfig, target: { namespace: string; pod: string; container: string }, command: string[], sinks: { stdout: (chunk: Buffer) => void; stderr: (chunk: Buffer) => void; status: (status: V1Status) => void }) {
  const stdin = new PassThrough();
  const stdout = new Writable({ write: (chunk: Buffer, _encoding, done) => { sinks.stdout(chunk); done(); } });
  const stderr = new Writable({ write: (chunk: Buffer, _encoding, done) => { sinks.stderr(chunk); done(); } });
  const socket = await new Exec(config).exec(target.namespace, target.pod, target.container, command, stdout, stderr, stdin, false, sinks.status);
  return { socket, stdin };
}

/** A framed persistent shell plus its killer, each on its own exec WebSocket. */
export class FramedShell {
  readonly stateDir = `/tmp/.berth-session-${randomBytes(6).toString('hex')}`;
  private readonly out = new MarkedStream();
  private readonly err = new MarkedStream();
  private readonly ended = new AbortController();
  private socket!: WebSocket;
  private stdin!: PassThrough;
  private killer!: { socket: WebSocket; stdin: PassThrough };
  private killerOut = new MarkedStream();
  /** The sub-protocol the server chose (v4.channel.k8s.io on 1.20). */
  protocol = '';
  hasSetsid = false;
  closeInfo: { code: number; reason: string } | undefined;
  exitStatus: V1Status | undefined;

  constructor(private readonly config: KubeConfig, private readonly target: { namespace: string; pod: string; container: string }) {}

  async open(): Promise<void> {
    const opened = await openExec(this.config, this.target, ['/bin/sh', '-c', SESSION_PROGRAM, 'sh', this.stateDir], {
      stdout: (chunk) => this.out.append(chunk),
      stderr: (chunk) => this.err.append(chunk),
      status: (status) => { this.exitStatus = status; },
    });
    this.socket = opened.socket;
    this.stdin = opened.stdin;
    this.protocol = this.socket.protocol;
    this.socket.on('close', (code: number, reason: Buffer) => {
      this.closeInfo = { code, reason: reason.toString() };
      this.ended.abort();
    });
    const ready = await this.out.waitFor(/__BERTH_READY_(\d)\n/, this.ended.signal);
    this.hasSetsid = ready[1] === '1';
    this.killer = await openExec(this.config, this.target, ['/bin/sh', '-c', KILLER_PROGRAM], {
      stdout: (chunk) => this.killerOut.append(chunk),
      stderr: () => undefined,
      status: () => undefined,
    });
  }

  private send(header: string, ...bodies: Buffer[]): void {
    this.stdin.write(Buffer.concat([Buffer.from(`${header}\n`), ...bodies]));
  }

  /** Replaces the session's variables and directory (sent over stdin, never in argv or a spec). */
  async setEnvironment(variables: Readonly<Record<string, string>>, cwd = '/workspace'): Promise<void> {
    const id = randomBytes(12).toString('hex');
    const lines = Object.entries(variables).map(([name, value]) => `export ${name}=${quote(value)}\n`).join('') + `export __BERTH_CWD=${quote(cwd)}\n`;
    const body = Buffer.from(lines);
    this.send(`E ${id} ${body.length} -`, body);
    await this.out.take(id, this.ended.signal);
  }

  /** Runs one command; at `timeoutMs` the killer ends its whole process tree (exit 124). */
  async run(command: string, options: { stdin?: Buffer; timeoutMs?: number } = {}): Promise<CommandResult> {
    const started = performance.now();
    const id = randomBytes(12).toString('hex');
    const body = Buffer.from(`${command}\n`);
    if (options.stdin) {
      this.send(`R ${id} ${body.length} ${options.stdin.length}`, body);
      await this.out.waitFor(new RegExp(`__BERTH_${id}_I__\n`), this.ended.signal);
      this.stdin.write(options.stdin);
    } else {
      this.send(`R ${id} ${body.length} -`, body);
    }
    let timedOut = false;
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
      timedOut = true;
      this.killer.stdin.write(`${this.stateDir} pid\n`);
    }, options.timeoutMs);
    try {
      const [out, err] = await Promise.all([this.out.take(id, this.ended.signal), this.err.take(id, this.ended.signal)]);
      return { exitCode: timedOut ? 124 : out.status, stdout: out.body, stderr: err.body, timedOut, milliseconds: performance.now() - started };
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** Kills whatever the last command left running (its process group and descendants). */
  async killLeftovers(): Promise<void> {
    this.killer.stdin.write(`${this.stateDir} last\n`);
    await this.killerOut.waitFor(new RegExp(`killed ${this.stateDir}\n`), this.ended.signal);
  }

  get alive(): boolean {
    return !this.ended.signal.aborted;
  }

  /** Closes both sockets (the exec processes end with them). */
  close(): void {
    this.killer?.socket.close();
    this.socket?.close();
  }
}
