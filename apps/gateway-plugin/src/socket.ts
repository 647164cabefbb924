// `@berth/gateway-plugin/socket`: for hosts that run each command in a process of its own
// (OpenClaw): `berth serve`'s server, to embed, and its thin client and argv.
export { serveSandboxes, SocketPathError, type SandboxSocketServer, type ServeSandboxesOptions } from './socket/serve-sandboxes.js';
export { requestSandboxExec, requestSandboxFile, SandboxSocketClientError } from './socket/request-sandbox-exec.js';
export { findPerl, PERL_SOCKET_CLIENT, requestFileOf, sandboxCommandArgv, type SandboxCommandArgvOptions } from './socket/sandbox-command-argv.js';
export { discardRequestFile, RequestFileError } from './socket/request-file.js';
export {
  encodeFramedResult,
  type SandboxSocketAnyRequest,
  type SandboxSocketErrorResponse,
  type SandboxSocketFileRequest,
  type SandboxSocketFileResult,
  type SandboxSocketGetFileRequest,
  type SandboxSocketPutFileRequest,
  type SandboxSocketRequest,
  type SandboxSocketResponse,
  type SandboxSocketResult,
} from './socket/protocol.js';
