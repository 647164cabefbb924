import { createExampleHost } from './example-host.js';

// Two people write to the gateway at the same moment, one on Telegram and one on WhatsApp.
// Run with: pnpm --filter @berth/example-host start (uses the default config file, or the defaults).
const host = createExampleHost();
await host.start();
try {
  const replies = await Promise.all([
    host.handle({
      platform: 'telegram',
      senderId: 123456789,
      chatId: 123456789,
      command: 'echo "hello from $(hostname)" > /workspace/hello.txt; ls /workspace',
    }),
    host.handle({ platform: 'whatsapp', senderId: '+1234567890', chatId: '+1234567890', command: 'ls /workspace; echo "token set: ${GITHUB_TOKEN:+yes}"' }),
  ]);
  for (const [index, reply] of replies.entries()) console.log(`reply ${index + 1} (exit ${reply.returncode}):\n${reply.output}`);
} finally {
  await host.stop();
}
