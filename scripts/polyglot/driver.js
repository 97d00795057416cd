// Runs one function of the README's Node recipe (extracted by ReadmeRecipesTest) and prints its result.
// Usage: node driver.js RECIPE_FILE COMMAND ARGS...  (run from the repository root: the recipe reads contract/);
// commands as in driver.sh. The recipe's require() resolves from this folder's node_modules (npm ci).
const fs = require('fs');
const Redis = require('ioredis');

const [recipe, command, ...args] = process.argv.slice(2);
// The recipe is a plain script of function declarations, as a reader pastes it: run it in a function scope of its
// own (with this folder's require) and take them.
const { shardOf, schedulePlain, scheduleById, rescheduleById, cancelById } = new Function('require',
  `${fs.readFileSync(recipe, 'utf8')}\nreturn { shardOf, schedulePlain, scheduleById, rescheduleById, cancelById };`)(require);

async function main() {
  if (command === 'shard') {
    return args.slice(1).map((key) => shardOf(key, Number(args[0]))).join('\n');
  }
  const redis = new Redis({ host: process.env.REDIS_HOST || '127.0.0.1', port: Number(process.env.REDIS_PORT || 6379) });
  try {
    switch (command) {
      case 'schedule_plain': return await schedulePlain(redis, args[0], args[1], Number(args[2]));
      case 'schedule_by_id': return await scheduleById(redis, args[0], args[1], args[2], Number(args[3]));
      case 'reschedule_by_id': return await rescheduleById(redis, args[0], args[1], Number(args[2]));
      case 'cancel_by_id': return (await cancelById(redis, args[0], args[1])) ? 1 : 0;
      default: throw new Error(`unknown command ${command}`);
    }
  } finally {
    redis.disconnect();
  }
}

main().then((out) => console.log(String(out)), (e) => { console.error(e); process.exit(1); });
