import { testPlatformAdapter } from '@berth/testkit';
import fc from 'fast-check';
import { createWhatsAppAdapter } from './create-whatsapp-adapter.js';

const linked: Record<string, string> = { '123456789012345@lid': '+447700900123', '555@lid': '15551234567@s.whatsapp.net' };

// WhatsApp's own suite run, exactly as a third party runs it for their adapter.
testPlatformAdapter({
  adapter: createWhatsAppAdapter({ internationalPrefix: '00', resolveLinkedId: (lid) => linked[lid] }),
  senders: fc.oneof(
    fc.stringMatching(/^[1-9][0-9]{6,14}$/),
    fc.stringMatching(/^[1-9][0-9]{6,14}$/).map((digits) => `+${digits}`),
    fc.tuple(fc.stringMatching(/^[1-9][0-9]{6,14}$/), fc.nat({ max: 99 })).map(([digits, device]) => `${digits}:${device}@s.whatsapp.net`),
    fc.stringMatching(/^[1-9][0-9]{6,14}$/).map((digits) => `00${digits}`),
  ),
  vectors: {
    valid: [
      { raw: '+447700900123', id: '+447700900123', folder: '+447700900123', env: '447700900123' },
      { raw: '+1 (234) 567-890', id: '+1234567890', folder: '+1234567890', env: '1234567890' },
      { raw: 'whatsapp:+1234567890', id: '+1234567890' },
      { raw: 'wa:+44 7700 900123', id: '+447700900123' },
      { raw: '1234567890', id: '+1234567890' },
      { raw: 1234567890, id: '+1234567890' },
      { raw: '0044 7700 900123', id: '+447700900123' },
      { raw: '447700900123@s.whatsapp.net', id: '+447700900123' },
      { raw: '447700900123:12@s.whatsapp.net', id: '+447700900123' },
      { raw: '447700900123.0:3@s.whatsapp.net', id: '+447700900123' },
      { raw: '447700900123@c.us', id: '+447700900123' },
      { raw: '123456789012345@lid', id: '+447700900123' },
      { raw: '123456789012345:7@lid', id: '+447700900123' },
      { raw: '555@lid', id: '+15551234567' },
      { raw: '+683 4002', id: '+6834002' },
      { raw: '+999 123 456 789 012', id: '+999123456789012' },
      { raw: { wa_id: '16315551234', profile: { name: 'Ada' } }, id: '+16315551234' },
      { raw: { from: '16315551234', id: 'wamid.X', type: 'text' }, id: '+16315551234' },
      { raw: { key: { remoteJid: '491701234567@s.whatsapp.net', fromMe: false, id: 'A' } }, id: '+491701234567' },
      { raw: { key: { remoteJid: '120363025246125486@g.us', participant: '491701234567@s.whatsapp.net', fromMe: false } }, id: '+491701234567' },
    ],
    invalid: [
      { raw: '120363025246125486@g.us', reason: /is a group, not a user/ },
      { raw: 'status@broadcast', reason: /status feed/ },
      { raw: '1234567890@broadcast', reason: /broadcast list/ },
      { raw: '120363123456789012@newsletter', reason: /channel \(newsletter\)/ },
      { raw: '999999999999999@lid', reason: /linked id \(LID\).*cannot map.*rather than guessed/ },
      { raw: '447700900123@example.com', reason: /not a WhatsApp user server/ },
      { raw: '(234) 567-8900', reason: /may be a national number/ },
      { raw: '07700 900123', reason: /starts with 0/ },
      { raw: '+0123456789', reason: /country code starting with 0/ },
      { raw: '+123456', reason: /6 digits/ },
      { raw: '+1234567890123456', reason: /16 digits/ },
      { raw: '+44 7700 9001x3', reason: /neither a phone number nor a JID/ },
      { raw: '+44+7700900123', reason: /only digits/ },
      { raw: 'a@b@s.whatsapp.net', reason: /more than one @/ },
      { raw: 'abc@s.whatsapp.net', reason: /not a user JID/ },
      { raw: '', reason: /is empty/ },
      { raw: 'wa:', reason: /is empty/ },
      { raw: '../447700900123', reason: /neither a phone number nor a JID/ },
      { raw: 'x'.repeat(10_240), reason: /too long/ },
      { raw: 2 ** 60, reason: /safe integer/ },
      { raw: -447700900123, reason: /not a phone number/ },
      { raw: { key: { remoteJid: '447700900123@s.whatsapp.net', fromMe: true } }, reason: /own account/ },
      { raw: { key: { remoteJid: 'status@broadcast', participant: '447700900123@s.whatsapp.net' } }, reason: /status update/ },
      { raw: { name: 'Ada' }, reason: /no key, wa_id or from/ },
      { raw: null, reason: /null/ },
      { raw: ['447700900123'], reason: /array/ },
    ],
  },
});
