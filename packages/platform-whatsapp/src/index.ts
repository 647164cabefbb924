export { createWhatsAppAdapter, type LinkedIdResolver, type WhatsAppAdapterOptions } from './create-whatsapp-adapter.js';
