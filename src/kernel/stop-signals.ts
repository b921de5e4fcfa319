// SIGINT and SIGTERM for a process that stops in order: the first signal asks it to stop, a second
// one forces the exit. npm forwards the terminal's SIGINT to its child, so one Ctrl-C under
// `npm start` or `npm run cli` arrives twice within milliseconds: only a signal after this long
// counts as the second one.
import { constants } from 'node:os';

const REPEAT_SIGNAL_MS = 1000;

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** The shell's exit status for a process stopped by `signal`: 130 for SIGINT, 143 for SIGTERM. */
export const exitCodeOf = (signal: StopSignal): number => 128 + constants.signals[signal];

/** Calls `stop` on the first signal and `force` on a second; returns a function that removes the handlers. */
export function onStopSignals(stop: (signal: StopSignal) => void, force: (signal: StopSignal) => void): () => void {
  let stoppingSince: number | null = null;
  const handle = (signal: StopSignal) => {
    if (stoppingSince === null) {
      stoppingSince = Date.now();
      stop(signal);
    } else if (Date.now() - stoppingSince >= REPEAT_SIGNAL_MS) force(signal);
  };
  const onInt = () => handle('SIGINT');
  const onTerm = () => handle('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}
