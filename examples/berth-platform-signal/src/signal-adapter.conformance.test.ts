import { testPlatformAdapter } from '@berth/testkit';
import fc from 'fast-check';
import { createSignalAdapter } from './create-signal-adapter.js';

const aci = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';

testPlatformAdapter({
  adapter: createSignalAdapter(),
  // Mostly valid senders, so injectivity is tried over many distinct ids.
  senders: fc.oneof(
    fc.uuid().map((uuid) => uuid.toUpperCase()),
    fc.uuid(),
    fc.stringMatching(/^\+[1-9][0-9]{6,14}$/),
  ),
  vectors: {
    valid: [
      { raw: aci, id: aci, folder: aci, env: 'A1B2C3D4E5F64A7B8C9D0E1F2A3B4C5D' },
      { raw: aci.toUpperCase(), id: aci },
      { raw: 'A1b2C3d4-E5f6-4A7b-8C9d-0E1f2A3b4C5d', id: aci },
      { raw: `signal:${aci}`, id: aci },
      { raw: `ACI:${aci}`, id: aci },
      { raw: '+447700900123', id: '+447700900123', folder: '+447700900123', env: '447700900123' },
      { raw: '+1 555-123-4567', id: '+15551234567' },
      { raw: { envelope: { source: '+447700900123', sourceNumber: '+447700900123', sourceUuid: aci, timestamp: 1 } }, id: aci },
      { raw: { envelope: { sourceNumber: '+447700900123' } }, id: '+447700900123' },
      { raw: '11111111-2222-4333-8444-555555555555', id: '11111111-2222-4333-8444-555555555555', env: '11111111222243338444555555555555' },
    ],
    invalid: [
      { raw: `PNI:${aci}`, reason: /phone-number identity \(PNI\)/ },
      { raw: '00000000-0000-0000-0000-000000000000', reason: /nil UUID/ },
      { raw: 'alice.42', reason: /username/ },
      { raw: '447700900123', reason: /neither an ACI/ },
      { raw: '+0447700900123', reason: /international form/ },
      { raw: 'a1b2c3d4e5f64a7b8c9d0e1f2a3b4c5d', reason: /neither an ACI/ },
      { raw: `${aci}/..`, reason: /neither an ACI/ },
      { raw: '', reason: /neither an ACI/ },
      { raw: 'x'.repeat(10_240), reason: /too long/ },
      { raw: 447700900123, reason: /as a string/ },
      { raw: { envelope: { groupInfo: {} } }, reason: /no envelope source/ },
    ],
  },
});
