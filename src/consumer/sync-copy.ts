// The copy `sync` keeps current: every record in memory by id, saved to disk (the copy, then its
// cursor: sync-files.ts) after `everyChanges` changes or `intervalMs`, and when the run ends, fails
// or is interrupted. Not after every feed page: a save rewrites the whole copy (370 MB for 100,000
// records), and a long feed has a page per 1,000 events.
//
// A crash between saves loses only work: the cursor on disk always belongs to the copy on disk (or
// is behind it, if the crash fell between the two renames), so the next run fetches the events
// since that cursor again and re-applies them. That is harmless: upserts and removals are keyed by
// id and arrive in feed order, so the last event of each id decides, as in an uninterrupted run.
import type { SyncBatch } from '@lods/client';
import { type CopyRecord, saveCopyAndState, saveState } from './sync-files.ts';

export type SavePolicy = { everyChanges: number; intervalMs: number };

export class SyncCopy {
  readonly #records: Map<string, CopyRecord>;
  readonly #files: { out: string; state: string };
  readonly #policy: SavePolicy;
  readonly #onSave: (records: number) => void;
  /** The cursor of the last batch applied; null until one is. */
  #cursor: string | null = null;
  /** Batches applied since the last save, and their changes (a reset batch counts its records). */
  #unsavedBatches = 0;
  #unsavedChanges = 0;
  /** Whether a batch since the last save changed the copy: a change, or a reset (even one of no record). */
  #copyChanged = false;
  #savedAt = Date.now();
  #saves = 0;

  constructor(options: {
    records: Map<string, CopyRecord>;
    files: { out: string; state: string };
    policy: SavePolicy;
    onSave: (records: number) => void;
  }) {
    this.#records = options.records;
    this.#files = options.files;
    this.#policy = options.policy;
    this.#onSave = options.onSave;
  }

  get size(): number {
    return this.#records.size;
  }

  /** The cursor of the last batch applied in this run (saved or not); null before the first. */
  get cursor(): string | null {
    return this.#cursor;
  }

  get saves(): number {
    return this.#saves;
  }

  /**
   * Applies a batch in memory, after saving what came before it if a save is due. Saving before
   * the batch rather than after it matters for a full walk: while its batch is being applied the
   * client still holds the walk's records, and the save serialises them (copyChunks); once the call
   * has returned, each record's line replaces the only remaining parsed copy.
   */
  async apply(batch: SyncBatch): Promise<void> {
    if (
      this.#unsavedChanges >= this.#policy.everyChanges ||
      (this.#unsavedBatches > 0 && Date.now() - this.#savedAt >= this.#policy.intervalMs)
    )
      await this.save();
    if (batch.reset) this.#records.clear();
    for (const change of batch.changes) {
      if (change.op === 'remove') this.#records.delete(change.id);
      else this.#records.set(change.id, change.record);
    }
    this.#cursor = batch.cursor;
    this.#unsavedBatches++;
    this.#unsavedChanges += batch.changes.length;
    if (batch.reset || batch.changes.length > 0) this.#copyChanged = true;
  }

  /**
   * Saves whatever was applied since the last save (nothing to do if nothing was); the cursor alone
   * when the copy did not change (the copy on disk is the one in memory: loaded, or saved since). A
   * reset that found no record empties the copy: that is written, never a newer cursor beside the old copy.
   */
  async save(): Promise<void> {
    if (this.#cursor === null || this.#unsavedBatches === 0) return;
    if (this.#copyChanged) await saveCopyAndState(this.#files, this.#records, this.#cursor);
    else await saveState(this.#files, this.#records, this.#cursor);
    this.#unsavedBatches = 0;
    this.#unsavedChanges = 0;
    this.#copyChanged = false;
    this.#savedAt = Date.now();
    this.#saves++;
    this.#onSave(this.#records.size);
  }
}
