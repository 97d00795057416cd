#!/usr/bin/env node
// A producer in Node with ioredis and crc-32: the shard rule (CRC32 mod M, earlier counts from K:meta's history) and
// the contract's Lua scripts (schedule, reschedule, cancel by id; a plain ZADD with its wake-up). Run it, or require
// it for the functions: node examples/producers/delay.js schedule_by_id delayqueue:order-timeout order-1001 '{"n":1}' 60000
//
// Needs Node 18+ and `npm ci` in this folder (package.json pins ioredis and crc-32). Connects to REDIS_HOST:REDIS_PORT
// (default 127.0.0.1:6379); reads the scripts from CONTRACT_DIR (default: the repository's contract/ folder).
// Commands as in delay.sh: shard M KEY... | schedule_plain K MESSAGE DELAY_MS |
// schedule_by_id K ID MESSAGE DELAY_MS [EXPIRY [NAME VALUE]...] | reschedule_by_id K ID DELAY_MS | cancel_by_id K ID.
// EXPIRY ('' none, epoch ms, +MS after due) and AMQP headers (e.g. traceparent) are per-message options (contract v2). They read K:meta on every call; a busy producer caches it for a
// few seconds (relay-api: 5 s).
const fs = require('fs');
const path = require('path');
const CRC32 = require('crc-32');

const CONTRACT_DIR = process.env.CONTRACT_DIR || path.join(__dirname, '..', '..', 'contract');

// crc-32 returns a signed 32-bit number: `>>> 0` makes it the unsigned CRC32 of the rule
function shardOf(key, m) {
  return (CRC32.buf(Buffer.from(key)) >>> 0) % m;
}

async function shardsOf(redis, K, key) { // the shard under the current count first, then under earlier counts
  const [shards, history] = await redis.hmget(`${K}:meta`, 'shards', 'history');
  const counts = [Number(shards || 16), ...(history ? history.split(',').map(Number) : [])];
  return [...new Set(counts.map((m) => shardOf(key, m)))];
}

function contract(redis, name, K, i, ...args) { // runs contract/<name>.lua on shard i of K (EVALSHA)
  const command = `delayRelay_${name}`;
  if (!redis[command]) {
    redis.defineCommand(command, { numberOfKeys: 5, lua: fs.readFileSync(path.join(CONTRACT_DIR, `${name}.lua`), 'utf8') });
  }
  return redis[command](`${K}:${i}`, `{${K}:${i}}:payloads`, `{${K}:${i}}:inflight`, `{${K}:${i}}:attempts`,
    `{${K}:${i}}:dead`, ...args);
}

async function schedulePlain(redis, K, message, delayMs) { // a plain ZADD, due time from Redis TIME
  const i = shardOf(message, Number((await redis.hget(`${K}:meta`, 'shards')) || 16));
  const [seconds, micros] = await redis.time();
  const due = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + delayMs;
  await redis.zadd(`${K}:${i}`, due, message);
  await redis.publish(`${K}:wake`, `${i}:${due}`); // optional: without it the relay sees it within max-idle
  return due;
}

// options (contract v2): { expiry: '' | epoch ms | '+ms' after due, headers: { traceparent: '00-...', ... } }
async function scheduleById(redis, K, id, message, delayMs, options = undefined) {
  const extra = [];
  if (options) {
    extra.push(String(options.expiry ?? ''));
    for (const [name, value] of Object.entries(options.headers || {})) {
      if (name.toLowerCase().startsWith('x-delay-')) throw new Error(`header ${name} is refused: the relay sets x-delay-* headers itself`);
      extra.push(name, String(value));
    }
  }
  const [first, ...earlier] = await shardsOf(redis, K, id);
  const due = await contract(redis, 'schedule', K, first, id, 'after', delayMs, `${K}:wake`, first, message, ...extra);
  for (const i of earlier) await contract(redis, 'cancel', K, i, id); // a copy from before a reshard
  return due;
}

async function rescheduleById(redis, K, id, delayMs) { // the new due time, -1 when not scheduled
  for (const i of await shardsOf(redis, K, id)) {
    const due = await contract(redis, 'reschedule', K, i, id, 'after', delayMs, `${K}:wake`, i);
    if (due !== -1) return due;
  }
  return -1;
}

async function cancelById(redis, K, id) { // true when cancelled
  let removed = 0;
  for (const i of await shardsOf(redis, K, id)) removed += await contract(redis, 'cancel', K, i, id);
  return removed > 0;
}

module.exports = { shardOf, shardsOf, schedulePlain, scheduleById, rescheduleById, cancelById };

async function main([command, ...args]) {
  if (command === 'shard') {
    return args.slice(1).map((key) => shardOf(key, Number(args[0]))).join('\n');
  }
  const Redis = require('ioredis');
  const redis = new Redis({ host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) });
  try {
    switch (command) {
      case 'schedule_plain': return await schedulePlain(redis, args[0], args[1], Number(args[2]));
      case 'schedule_by_id': {
        const headers = {};
        for (let j = 5; j + 1 < args.length; j += 2) headers[args[j]] = args[j + 1];
        const options = args.length > 4 ? { expiry: args[4], headers } : undefined;
        return await scheduleById(redis, args[0], args[1], args[2], Number(args[3]), options);
      }
      case 'reschedule_by_id': return await rescheduleById(redis, args[0], args[1], Number(args[2]));
      case 'cancel_by_id': return (await cancelById(redis, args[0], args[1])) ? 1 : 0;
      default: throw new Error(`unknown command ${command}: shard, schedule_plain, schedule_by_id, reschedule_by_id or cancel_by_id`);
    }
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((out) => console.log(String(out)), (e) => { console.error(e.message || e); process.exit(1); });
}
