export { createTelegramAdapter, type TelegramAdapterOptions } from './create-telegram-adapter.js';
