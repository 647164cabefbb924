import { programText } from '../shell/program-file.js';
import abandonWrite from './abandon-write.sh';
import appendWrite from './append-write.sh';
import beginWrite from './begin-write.sh';
import { FILE_EXIT } from './file-exit-codes.js';
import finishWrite from './finish-write.sh';
import readChunk from './read-chunk.sh';
import statPath from './stat-path.sh';
import writeFile from './write-file.sh';
import createFile from './create-file.sh';
import makeFolder from './make-folder.sh';
import removePath from './remove-path.sh';
import renamePath from './rename-path.sh';
import copyFile from './copy-file.sh';
import listFolder from './list-folder.sh';

/** The lines that set each name of the exit-code table, put in front of every file program. */
const EXIT_CODE_LINES = Object.entries(FILE_EXIT)
  .map(([name, status]) => `${name}=${status}`)
  .join('\n');

/** The text a file program of this folder sends: the exit-code table, then the program. */
export function fileProgram(file: string): string {
  return `${EXIT_CODE_LINES}\n${programText(file)}`;
}

/** Reads one chunk of a file: see read-chunk.sh (readInChunks runs it). */
export const READ_CHUNK = fileProgram(readChunk);

/** The kit's programs by name, each a `.sh` file of this folder (its header says its arguments). */
export const FILE_PROGRAMS = {
  readChunk: READ_CHUNK,
  beginWrite: fileProgram(beginWrite),
  appendWrite: fileProgram(appendWrite),
  finishWrite: fileProgram(finishWrite),
  abandonWrite: fileProgram(abandonWrite),
  // OpenClaw's fs bridge.
  statPath: fileProgram(statPath),
  writeFile: fileProgram(writeFile),
  createFile: fileProgram(createFile),
  makeFolder: fileProgram(makeFolder),
  removePath: fileProgram(removePath),
  renamePath: fileProgram(renamePath),
  copyFile: fileProgram(copyFile),
  listFolder: fileProgram(listFolder),
} as const;
