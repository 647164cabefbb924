export * from './create-telegram-adapter.js';
