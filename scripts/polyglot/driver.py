"""Runs one function of the README's Python recipe (extracted by ReadmeRecipesTest) and prints its result.

Usage: driver.py RECIPE_FILE COMMAND ARGS...  (run from the repository root: the recipe reads contract/);
commands as in driver.sh.
"""
import os
import sys

import redis

recipe, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
functions = {}
with open(recipe) as f:
    exec(compile(f.read(), recipe, "exec"), functions)
r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))

if command == "shard":
    for key in args[1:]:
        print(functions["shard_of"](key, int(args[0])))
elif command == "schedule_plain":
    print(functions["schedule_plain"](r, args[0], args[1], int(args[2])))
elif command == "schedule_by_id":
    print(functions["schedule_by_id"](r, args[0], args[1], args[2], int(args[3])))
elif command == "reschedule_by_id":
    print(functions["reschedule_by_id"](r, args[0], args[1], int(args[2])))
elif command == "cancel_by_id":
    print(1 if functions["cancel_by_id"](r, args[0], args[1]) else 0)
else:
    sys.exit(f"unknown command {command}")
