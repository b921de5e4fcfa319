// The bound on one record's rendered size, checked when the content platform writes it. A record is
// served whole, as one item of a list page and as the `data` of each of its events: a bound here is
// what lets every page stop within PAGE_MAX_BYTES after at most a few records (catalog/read-model.ts,
// feed/feed-reads.ts). Measured as the record would render when published (the longest status and
// every timestamp set): no later lifecycle change can take it over the bound.
import { badInput } from '../kernel/errors.ts';
import { type LearningOpportunityContent, renderRecord } from './record.ts';

/** 256 KiB: docs/decisions.md, "Sizes of records and pages". */
export const RECORD_MAX_BYTES = 256 * 1024;

const EPOCH = new Date(0);

/** The UTF-8 length of the record's rendered JSON once published. */
export const renderedBytes = (content: LearningOpportunityContent): number =>
  Buffer.byteLength(
    renderRecord({ ...content, status: 'PUBLISHED', publishedAt: EPOCH, createdAt: EPOCH, updatedAt: EPOCH }),
  );

/** Throws BAD_USER_INPUT naming the record's largest field (under `prefix`) when it would render above RECORD_MAX_BYTES. */
export function checkRenderedSize(content: LearningOpportunityContent, prefix: string): void {
  const bytes = renderedBytes(content);
  if (bytes <= RECORD_MAX_BYTES) return;
  // Which field to name: the largest, by its JSON (close enough to its rendered share to rank).
  const sizes = Object.entries(content).map(
    ([field, value]) => [field, Buffer.byteLength(JSON.stringify(value) ?? '')] as const,
  );
  const [field, fieldBytes] = sizes.reduce((a, b) => (b[1] > a[1] ? b : a));
  throw badInput([
    {
      name: `${prefix}.${field}`,
      reason: `makes the record ${bytes} bytes when rendered, above the limit of ${RECORD_MAX_BYTES} (256 KiB); this is its largest field (about ${fieldBytes} bytes): shorten it`,
    },
  ]);
}
