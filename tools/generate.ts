// `npm run generate`: rewrites the files derived from the record schema (see generated-sources.ts).
import { readFile, writeFile } from 'node:fs/promises';
import { CLIENT_TYPES_PATH, generateClientTypes, generateOpenApi, OPENAPI_PATH } from './generated-sources.ts';

await writeFile(OPENAPI_PATH, generateOpenApi(await readFile(OPENAPI_PATH, 'utf8')));
await writeFile(CLIENT_TYPES_PATH, generateClientTypes());
console.log(`wrote ${OPENAPI_PATH} and ${CLIENT_TYPES_PATH}`);
