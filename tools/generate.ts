// `npm run generate`: rewrites the files derived from the record schema (see generated-sources.ts).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  CLIENT_TYPES_PATH,
  COMBINED_SDL_PATH,
  generateClientTypes,
  generateCombinedSdl,
  generateOpenApi,
  OPENAPI_PATH,
} from './generated-sources.ts';

await writeFile(OPENAPI_PATH, generateOpenApi(await readFile(OPENAPI_PATH, 'utf8')));
await writeFile(CLIENT_TYPES_PATH, generateClientTypes());
await mkdir(dirname(COMBINED_SDL_PATH), { recursive: true });
await writeFile(COMBINED_SDL_PATH, generateCombinedSdl());
console.log(`wrote ${OPENAPI_PATH}, ${CLIENT_TYPES_PATH} and ${COMBINED_SDL_PATH}`);
