// What the delivery worker holds between fetch and settlement, counted in one place: jobs whose
// events and receivers are loading, deliveries between send and settlement ("sending"), and attempts
// being recorded, in total and per receiver (pg-boss caps jobs in progress per receiver, so the cap
// a fetch asks for is widened by the most any one receiver has being recorded, never by the total).
// Counts, not flags: every increment has its decrement in worker.ts, in a finally where it can throw.
export class InFlight {
  /** Jobs fetched whose targets are loading. */
  loading = 0;
  /** Deliveries taken from a receiver queue and not yet sent (or dropped). */
  sending = 0;
  /** Sent attempts not yet settled by the recorder. */
  recording = 0;
  readonly #recordingOf = new Map<string, number>();

  startLoading(jobs: number): void {
    this.loading += jobs;
  }

  loaded(jobs: number): void {
    this.loading -= jobs;
  }

  startSending(): void {
    this.sending += 1;
  }

  sent(): void {
    this.sending -= 1;
  }

  startRecording(receiverId: string): void {
    this.#countRecording(receiverId, 1);
  }

  recorded(receiverId: string): void {
    this.#countRecording(receiverId, -1);
  }

  /** The most attempts any one receiver has being recorded (0 when none). */
  mostRecordingOfOneReceiver(): number {
    return Math.max(0, ...this.#recordingOf.values());
  }

  /** Deliveries that stop() waits for: sent or being sent, and not yet settled. */
  unsettled(): number {
    return this.sending + this.recording;
  }

  #countRecording(receiverId: string, delta: 1 | -1): void {
    this.recording += delta;
    const n = (this.#recordingOf.get(receiverId) ?? 0) + delta;
    if (n > 0) this.#recordingOf.set(receiverId, n);
    else this.#recordingOf.delete(receiverId);
  }
}
