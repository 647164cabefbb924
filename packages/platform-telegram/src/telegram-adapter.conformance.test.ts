import { testPlatformAdapter } from '@berth/testkit';
import fc from 'fast-check';
import { createTelegramAdapter, TELEGRAM_MAX_USER_ID } from './create-telegram-adapter.js';

// Telegram's own suite run, exactly as a third party runs it for their adapter.
testPlatformAdapter({
  adapter: createTelegramAdapter(),
  senders: fc.oneof(
    fc.integer({ min: -(2 ** 45), max: TELEGRAM_MAX_USER_ID }),
    fc.integer({ min: 1, max: 99_999 }).map(String),
    fc
      .bigInt({ min: 1n, max: 2n ** 53n })
      .map((id) => ({ message: { message_id: 1, from: { id: Number(id), is_bot: false, first_name: 'A' }, chat: { id: Number(id), type: 'private' } } })),
  ),
  vectors: {
    valid: [
      { raw: 123456789, id: '123456789', folder: '123456789', env: '123456789' },
      { raw: '123456789', id: '123456789' },
      { raw: 'telegram:123456789', id: '123456789' },
      { raw: 'tg:123456789', id: '123456789' },
      { raw: 'TG: 123456789 ', id: '123456789' },
      { raw: '00123456789', id: '123456789' },
      { raw: 7_012_345_678, id: '7012345678', folder: '7012345678', env: '7012345678' },
      { raw: 42n, id: '42' },
      { raw: String(TELEGRAM_MAX_USER_ID), id: '4503599627370495' },
      { raw: { id: 5_551_234_567, is_bot: false, first_name: 'Ada' }, id: '5551234567' },
      { raw: { from: { id: 123456789, is_bot: false, first_name: 'Ada' } }, id: '123456789' },
      {
        raw: {
          update_id: 10_000,
          message: {
            message_id: 1,
            date: 1,
            from: { id: 987654321, is_bot: false, first_name: 'Bo' },
            chat: { id: -1001234567890, type: 'supergroup' },
            text: 'ls',
          },
        },
        id: '987654321',
      },
      {
        raw: {
          update_id: 2,
          edited_message: { message_id: 3, from: { id: 111222333, is_bot: false, first_name: 'C' }, chat: { id: 111222333, type: 'private' } },
        },
        id: '111222333',
      },
      { raw: { update_id: 4, callback_query: { id: 'q1', from: { id: '444555666', is_bot: false, first_name: 'D' }, data: 'x' } }, id: '444555666' },
      { raw: { update_id: 5, poll_answer: { poll_id: 'p', user: { id: 777888999, is_bot: false, first_name: 'E' }, option_ids: [0] } }, id: '777888999' },
    ],
    invalid: [
      { raw: -1001234567890, reason: /chat \(a supergroup or channel\), not a user/ },
      { raw: '-1001234567890', reason: /supergroup or channel/ },
      { raw: -123456, reason: /chat \(a group\)/ },
      { raw: 'tg:-4242', reason: /not a user/ },
      { raw: 2 ** 53 + 2, reason: /safe-integer range.*string or a bigint/ },
      { raw: 2 ** 52, reason: /larger than 2\^52/ },
      { raw: '99999999999999999999', reason: /larger than 2\^52/ },
      { raw: 0, reason: /0, which is not a user id/ },
      { raw: 12.5, reason: /not an integer/ },
      { raw: '', reason: /is empty/ },
      { raw: 'telegram:', reason: /is empty/ },
      { raw: '@durov', reason: /username/ },
      { raw: '12 34', reason: /not a user id/ },
      { raw: '１２３', reason: /not a user id/ },
      { raw: '1e9', reason: /not a user id/ },
      { raw: '0x1F', reason: /not a user id/ },
      { raw: '../123', reason: /not a user id/ },
      { raw: 'x'.repeat(10_240), reason: /too long/ },
      { raw: 777000, reason: /many people/ },
      {
        raw: { message: { from: { id: 1087968824, is_bot: true, first_name: 'Group' }, sender_chat: { id: -1001, type: 'supergroup' } } },
        reason: /on behalf of a chat/,
      },
      { raw: { channel_post: { message_id: 1, sender_chat: { id: -1002, type: 'channel' }, chat: { id: -1002, type: 'channel' } } }, reason: /channel post/ },
      { raw: { id: 99, is_bot: true, first_name: 'SomeBot' }, reason: /is a bot.*allowBots/ },
      { raw: { message: { message_id: 1, chat: { id: 1, type: 'private' } } }, reason: /no sender/ },
      { raw: { id: -1001234567890, type: 'supergroup', title: 'G' }, reason: /is a chat/ },
      { raw: { id: 5, type: 'private' }, reason: /is a chat/ },
      { raw: null, reason: /null/ },
      { raw: undefined, reason: /not a user id/ },
      { raw: [123], reason: /array/ },
      { raw: { update_id: 1 }, reason: /not an update, a message or a user/ },
    ],
  },
});
