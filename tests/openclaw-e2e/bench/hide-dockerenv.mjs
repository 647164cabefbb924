// Preloaded into the bench's gateway (node --import) on a machine that carries /.dockerenv
// although the gateway runs in no container (its image was built with Docker). OpenClaw's own
// docker backend reads that file as "the Gateway runs in a container", tries to find that
// container through the engine and refuses to start sandboxes. Hiding that one file from the
// gateway process lets the bench compare both backends; Berth never reads it.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const existsSync = fs.existsSync;
fs.existsSync = (file) => (file === '/.dockerenv' ? false : existsSync(file));
syncBuiltinESMExports();
