// Preloaded into `berth serve` (node --import) by the Hermes bridge. The bridge holds this
// process's stdin open and never writes to it: when the gateway ends, however it ends (SIGKILL
// included), the pipe closes and the server stops as it does on SIGTERM, removing its socket.
process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.on('error', () => process.kill(process.pid, 'SIGTERM'));
process.stdin.resume();
// Reading stdin must not keep the process alive once the server itself has stopped.
process.stdin.unref?.();
