// The postgres server process of an embedded cluster (db/embedded-postgres.ts): started in a session
// of its own (detached, so that a Ctrl-C to the terminal's process group does not stop it under the
// service's ordered shutdown) and therefore stopped by us on every way out: stop, process exit, and
// a signal nobody else in the process handles.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { PostgresIdentity } from './postgres-placement.ts';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Runs postgres on `dir` at 127.0.0.1:`port` (no Unix socket); resolves once it accepts connections,
 * rejects with PortTakenError when the port was taken.
 */
export async function runPostgres(
  home: string,
  dir: string,
  port: number,
  ids: PostgresIdentity,
  log: (message: string) => void,
): Promise<ChildProcess> {
  const child = spawn(
    join(home, 'bin', 'postgres'),
    [
      '-D',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...(ids ?? {}), detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  watch(child);
  try {
    await untilReady(child, port, log);
  } catch (error) {
    await stopProcess(child);
    throw error;
  }
  return child;
}

/**
 * postgres could not listen on its port: another process had bound it between freePort() and
 * postgres's own bind (the port comes from the range outgoing connections draw from). Starting
 * again on another port is the remedy (embedded-postgres.ts).
 */
export class PortTakenError extends Error {
  readonly port: number;
  constructor(port: number) {
    super(`port ${port} was taken before postgres could bind it`);
    this.port = port;
  }
}

function untilReady(child: ChildProcess, port: number, log: (message: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let portTaken = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      log(text);
      if (text.includes('Address already in use')) portTaken = true;
      if (text.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(portTaken ? new PortTakenError(port) : new Error(`postgres exited (code ${code}, signal ${signal})`)),
    );
  });
}

// Every running cluster of this process, stopped when the process goes away however it does.
const running = new Set<ChildProcess>();

function watch(child: ChildProcess): void {
  if (running.size === 0) {
    process.on('exit', stopAllNow);
    for (const signal of SIGNALS) process.on(signal, exitUnlessHandled);
  }
  running.add(child);
  child.once('exit', () => forget(child));
  child.once('error', () => forget(child));
}

function forget(child: ChildProcess): void {
  if (!running.delete(child) || running.size > 0) return;
  process.off('exit', stopAllNow);
  for (const signal of SIGNALS) process.off(signal, exitUnlessHandled);
}

/** "Fast" shutdown: postgres rolls back open transactions, writes a checkpoint and exits. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
}

function stopAllNow(): void {
  for (const child of running) child.kill('SIGINT');
}

/** A process that handles the signal itself (the service) shuts down in order; others just exit. */
function exitUnlessHandled(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) === 1) process.exit(128 + constants.signals[signal]);
}
