// The delivery worker's modes (worker.ts), in order, and the one transition allowed from each:
//   starting -> running (listening, polling) -> stopping (no fetch, no new send) -> stopped.
export type WorkerMode = 'starting' | 'running' | 'stopping' | 'stopped';

const NEXT_MODE: Record<WorkerMode, WorkerMode | null> = {
  starting: 'running',
  running: 'stopping',
  stopping: 'stopped',
  stopped: null,
};

/** `to`, if it follows `from`; throws otherwise. */
export function nextMode(from: WorkerMode, to: WorkerMode): WorkerMode {
  if (NEXT_MODE[from] !== to) throw new Error(`delivery worker: no transition from ${from} to ${to}`);
  return to;
}
