// Firefox's own window (its "chrome": tabs, prompts), which pages cannot see: with
// -remote-allow-system-access (launchFirefox(path, { chrome: true })) WebDriver BiDi lists the browser
// window as a context ("moz:scope": "chrome") and evaluates scripts in it. Used to see what Firefox
// itself offers the user, such as the password manager's "Save password for ...?" prompt.
import type { Browser } from 'puppeteer-core';

type RemoteValue = { type: string; value?: unknown };
type BidiConnection = { send: (method: string, params: object) => Promise<{ result: unknown }> };

export type FirefoxChrome = {
  /** The value of `expression` (awaited if a promise) evaluated in the browser window; strings and arrays of strings. */
  run: (expression: string) => Promise<unknown>;
};

const plain = (v: RemoteValue): unknown => (v.type === 'array' ? (v.value as RemoteValue[]).map(plain) : v.value);

export async function firefoxChrome(browser: Browser): Promise<FirefoxChrome> {
  const connection = (browser as unknown as { connection: BidiConnection }).connection;
  const tree = (await connection.send('browsingContext.getTree', { 'moz:scope': 'chrome' })).result as {
    contexts: { context: string }[];
  };
  const context = tree.contexts[0]!.context;
  return {
    run: async (expression) => {
      const { result } = (await connection.send('script.evaluate', {
        expression,
        target: { context },
        awaitPromise: true,
      })) as { result: { type: string; result?: RemoteValue; exceptionDetails?: { text: string } } };
      if (result.type === 'exception') throw new Error(`in Firefox's window: ${result.exceptionDetails!.text}`);
      return plain(result.result!);
    },
  };
}
