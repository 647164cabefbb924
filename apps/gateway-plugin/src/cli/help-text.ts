import { BERTH_FAILURE_EXIT_CODE, SANDBOX_SOCKET_PROTOCOL_VERSION, TIMEOUT_EXIT_CODE } from '@berth/core/request-protocol';
import type { CommandName } from './parse-cli-arguments.js';

const COMMON = `      --config FILE   the gateway config (default: \${HERMES_HOME:-~/.hermes}/config.yaml when it exists)
  -h, --help          show this help`;

/** `berth --help`. */
export const MAIN_HELP = `berth — per-user sandboxes for agent gateways

Usage: berth COMMAND [options]

Commands:
  exec    run a command in a user's or a task's sandbox, as the terminal tool would
  ls      list every sandbox Berth owns on the engine
  rm      remove a sandbox (--purge: its workspace and home too)
  env     show the variables a user's sandbox gets, and the prefix to set them
  doctor  check the engine, the config, the image and the sandbox root
  demo    play two Telegram users and one WhatsApp user and show that they stay apart
  serve   hold warm sandbox sessions and serve them on a Unix socket to "exec --socket"
  top     show what each sandbox uses now (CPU, memory, processes, disk, network, commands)

Berth's own environment stands for the gateway's: HERMES_USER_<PLATFORM>_<ID>_<NAME>
variables, TERMINAL_SANDBOX_DIR and HERMES_HOME are read from it.
Exit status: the command's for exec (${TIMEOUT_EXIT_CODE} after a timeout); ${BERTH_FAILURE_EXIT_CODE} for any error of Berth's own.
Run "berth COMMAND --help" for a command's options.
`;

/** `berth COMMAND --help`. */
export const COMMAND_HELP: Record<CommandName, string> = {
  exec: `Usage: berth exec [--platform P --user ID | --session-key KEY | --task T] [--profile NAME] [--timeout S] [--cwd DIR] -- COMMAND...
       berth exec --socket PATH [--session-key KEY | --platform P --user ID] [--task T] [--profile NAME] [--stdin] [--timeout S] [--cwd DIR] -- COMMAND...

Runs COMMAND in the sandbox the terminal tool would use for that session (decided by the
same function: with docker_user_sandbox false a user's commands run in the task sandbox), as
the terminal tool runs it (a persistent shell, the user's variables, output masked). The words after -- are joined with spaces into one
command line for the sandbox's shell, as ssh does. Stdin is empty.

With --socket, it is the thin client of "berth serve": the command runs in the server's warm
shell sessions (cd and export persist between clients of one user), the server's config and
environment apply, and nothing but the socket client is loaded.

Options:
      --platform P    the user's platform, e.g. telegram
      --user ID       the user's id on that platform, e.g. 123456789
      --session-key KEY
                      a host session key, e.g. agent:main:telegram:direct:123: a direct chat
                      names its user; a group, channel, thread, cron or hook key gets that
                      conversation's own sandbox; a key naming no single user is refused
      --task T        a task sandbox (the legacy layout) when no user is given (default: default)
      --profile NAME  the host profile the sandbox belongs to (Hermes 0.21+), when not the default
      --socket PATH   send the command to "berth serve --socket PATH" instead
      --stdin         with --socket: forward this process's stdin to the command (up to 1 MiB)
      --timeout S     seconds before the command is killed, exit ${TIMEOUT_EXIT_CODE} (default: terminal.timeout)
      --cwd DIR       working directory inside the sandbox
${COMMON}

Output shows as it comes. Ctrl-C stops the command (with --socket, the server stops it) and
exits 130; the sandbox stays. A first command that fails or is interrupted before it runs
removes what it made for the sandbox, and says so.

Exit status: the command's; ${TIMEOUT_EXIT_CODE} after a timeout; 130 after Ctrl-C; ${BERTH_FAILURE_EXIT_CODE} when Berth itself fails (bad id,
bad config, engine unreachable, image missing, no server on the socket), with one line on
stderr and nothing left behind.
`,
  ls: `Usage: berth ls [--json]

Lists every sandbox Berth owns on the engine: scope, platform and user (or task), container
and state, last use, disk use against terminal.container_disk, workspace and home folders.

Options:
      --json          print an array of {scope, kind, platform, user, task, profile, containerId,
                      state, workspace, home, lastUsed, disk: {usedMb, limitMb} | null}
${COMMON}
`,
  rm: `Usage: berth rm (--platform P --user ID | --session-key KEY | --task T) [--profile NAME] [--purge]

Removes the container of the sandbox the terminal tool would use for that session. With
--purge, also deletes its workspace and home folders, and nothing else: symbolic links inside
are removed, never followed. A user or key whose commands run in a shared task sandbox
(docker_user_sandbox false) is refused; name the task instead.

Options:
      --platform P    the user's platform
      --user ID       the user's id on that platform
      --session-key KEY
                      a host session key (a direct chat's user, or a conversation)
      --task T        a task sandbox instead
      --profile NAME  the host profile the sandbox belongs to (Hermes 0.21+), when not the default
      --purge         delete the workspace and home too
${COMMON}
`,
  env: `Usage: berth env (--platform P --user ID | --session-key KEY) [--profile NAME] [--json]

Shows the variables the sandbox of that session gets (as the terminal tool resolves it), each with its source (static: docker_env,
forwarded: docker_forward_env, user: the user's own, linked: a linked identity's), values
masked, and the exact prefix an operator writes for that user, e.g.
HERMES_USER_TELEGRAM_123456789_GITHUB_TOKEN=... Also lists, by name, the variables under
the prefix that reach no sandbox and why.

Options:
      --platform P    the user's platform
      --user ID       the user's id on that platform
      --session-key KEY
                      a host session key
      --profile NAME  the host profile the sandbox belongs to (Hermes 0.21+), when not the default
      --json          print {identity, scope, prefix, linked, variables, refused}
${COMMON}
`,
  doctor: `Usage: berth doctor [--json]

Checks the container engine (which one, how it was found, its version), the config file
and whether it is valid, the image and whether it is on the engine, and the sandbox root
and whether it is writable. Prints the one thing to do for each problem.

Options:
      --json          print {ok, checks: [{name, status, detail, fix}]}
${COMMON}

Exit status: 0 when all is well, 1 when a check failed.
`,
  demo: `Usage: berth demo [--json]

Plays a short conversation on the local engine: two Telegram users and one WhatsApp user
each write a note and read their own GITHUB_TOKEN and a shared forwarded variable, then try
to read each other's notes and tokens. Prints who saw what, then removes everything it made
(containers and the temporary sandbox root). Uses the configured image, or the local base
image when that one is missing and cannot be pulled.

Options:
      --json          print the report as JSON
${COMMON}

Exit status: 0 when isolation held and everything was removed, 1 otherwise.
`,
  serve: `Usage: berth serve --socket PATH [--metrics ADDR] [--config FILE]

Holds one Berth (one backend, so every user's shell session stays warm) and serves it on a
Unix socket, so that a process a host spawns reaches it with
"berth exec --socket PATH --session-key KEY -- COMMAND". Runs until SIGINT or SIGTERM, then
removes the socket.

The socket is created with mode 0600 (only this user can connect: whoever can connect can run
commands in every user's sandbox); its folder is created with mode 0700 when missing, and a
folder other users can write to is refused. A socket left by a stopped server is replaced;
anything else at PATH is refused.

Protocol: one JSON line per connection, {"v":${SANDBOX_SOCKET_PROTOCOL_VERSION}, "platform"?, "userId"?, "chatId"?,
"sessionKey"?, "taskId"?, "command", "cwd"?, "timeout"?, "stdin"?} (at most 1 MiB), answered by one JSON line,
{"v":${SANDBOX_SOCKET_PROTOCOL_VERSION}, exitCode, stdout, stderr, timedOut, truncated, durationMs, scope} or
{"v":${SANDBOX_SOCKET_PROTOCOL_VERSION}, "error": {code, message}}.

With --metrics, it also serves Prometheus metrics over HTTP at ADDR (GET /metrics only):
HOST:PORT, or :PORT for loopback (127.0.0.1). Labels name sandboxes by their opaque names,
never a user unless terminal.metrics_real_user_ids is set; a non-loopback ADDR sends them off
the host (docs/observability.md).

Options:
      --socket PATH   the Unix socket to listen on
      --metrics ADDR  serve Prometheus metrics at http://ADDR/metrics, e.g. :9464
${COMMON}

Prints one line "berth serve: listening on PATH …" on stdout when ready (with the metrics'
URL when --metrics is given).
`,
  top: `Usage: berth top [--interval S] | berth top --once [--json]

One row per sandbox, hottest first (CPU, then memory against its limit): who (escaped as
berth ls shows it), state, CPU (% of one core), memory against its own limit, processes
against its pids limit, disk against terminal.container_disk, network bytes in and out,
commands in the last hour (from terminal.audit_file), the last command's age, and NEAR: a
per-user limit (user_commands_per_minute, …) the sandbox's user is at 80 % of or was refused at.
Usage is read from the host's cgroups under the shared bound; where it cannot be (rootless or
remote engine, systemd's cgroup manager, Kubernetes) its columns show "-" and a line says why.
Each refresh lists the engine once and reads kernel files: no call per sandbox.

Options:
      --once          print one table (two readings a second apart) and leave
      --json          with --once: print an array of {scope, kind, platform, user, task,
                      sandbox, containerId, state, cpuPercent, memory: {usedMb, limitMb},
                      processes: {current, limit}, disk: {usedMb, limitMb}, network:
                      {receivedBytes, sentBytes}, commandsLastHour, lastCommand,
                      lastCommandSecondsAgo, near: [{limit, detail}]} (null where unknown)
      --interval S    seconds between refreshes of the live table (default: 2)
${COMMON}

The live table redraws in place on a terminal (one table per refresh otherwise) until Ctrl-C,
which exits 0.
`,
};
