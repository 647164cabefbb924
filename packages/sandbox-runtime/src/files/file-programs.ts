import { programText } from '../shell/program-file.js';
import abandonWrite from './abandon-write.sh';
import appendWrite from './append-write.sh';
import beginWrite from './begin-write.sh';
import { FILE_EXIT } from './file-exit-codes.js';
import finishWrite from './finish-write.sh';
import readChunk from './read-chunk.sh';

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
} as const;
