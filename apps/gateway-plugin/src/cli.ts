#!/usr/bin/env node
import { runCli } from './cli/run-cli.js';

// The process's environment stands for the gateway's: HERMES_USER_* variables, TERMINAL_SANDBOX_DIR, HERMES_HOME.
const status = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, environment: process.env, cwd: process.cwd() });
process.exitCode = status;
