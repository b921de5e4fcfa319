// What the operator console's browser tests (test/console/*, in Chromium and in Firefox) run against:
// the real service and delivery worker of this test file's database (one attempt per delivery, so a
// failing receiver has a dead letter at once), an API key that may do everything the console offers,
// real HTTP receivers, and publications that become events.
import { createTestKey } from './api.ts';
import { startReceiver, type TestReceiver } from './receiver.ts';
import { resetWebhooks, startWebhookStack, type WebhookStack } from './webhooks.ts';

export type ConsoleWorld = {
  stack: WebhookStack;
  /** An API key with receivers:manage and graphql:read. */
  admin: string;
  /** A real HTTP receiver, closed by close(). */
  newReceiver: () => Promise<TestReceiver>;
  close: () => Promise<void>;
};

export async function startConsoleWorld(): Promise<ConsoleWorld> {
  await resetWebhooks();
  const stack = await startWebhookStack({ config: { maxAttempts: 1 } });
  const admin = await createTestKey(['receivers:manage', 'graphql:read']);
  const receivers: TestReceiver[] = [];
  return {
    stack,
    admin,
    newReceiver: async () => {
      const receiver = await startReceiver();
      receivers.push(receiver);
      return receiver;
    },
    close: async () => {
      await stack.stop();
      for (const r of receivers) await r.close();
    },
  };
}
