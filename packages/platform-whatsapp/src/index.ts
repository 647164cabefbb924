export * from './create-whatsapp-adapter.js';
