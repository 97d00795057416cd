#!/usr/bin/env python3
# A producer in Python with redis-py: the shard rule (CRC32 mod M, earlier counts from K:meta's history) and the
# contract's Lua scripts (schedule, reschedule, cancel by id; a plain ZADD with its wake-up). Run it, or import it
# for the functions: python3 examples/producers/delay.py schedule_by_id delayqueue:order-timeout order-1001 '{"n":1}' 60000
#
# Needs the redis package (Debian python3-redis, or pip install redis). Connects to REDIS_HOST:REDIS_PORT (default
# 127.0.0.1:6379); reads the scripts from CONTRACT_DIR (default: the repository's contract/ folder).
# Commands as in delay.sh: shard M KEY... | schedule_plain K MESSAGE DELAY_MS |
# schedule_by_id K ID MESSAGE DELAY_MS [EXPIRY [NAME VALUE]...] | reschedule_by_id K ID DELAY_MS | cancel_by_id K ID.
# EXPIRY and the AMQP headers are per-message options (contract v2): EXPIRY '' none, epoch ms, or +MS after the due
# time; headers such as traceparent are published unchanged beside the relay's own (x-delay-* names are refused). They read K:meta on every call; a busy producer caches it for a
# few seconds (relay-api: 5 s).
import os
import sys
import zlib
from functools import lru_cache

CONTRACT_DIR = os.environ.get("CONTRACT_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "contract")


def shard_of(key, m):  # zlib.crc32 is unsigned in Python 3
    return zlib.crc32(key.encode() if isinstance(key, str) else key) % m


def shards_of(r, K, key):  # the shard under the current count first, then under earlier counts (history)
    shards, history = r.hmget(f"{K}:meta", "shards", "history")
    counts = [int(shards or 16)] + [int(c) for c in (history or b"").split(b",") if c]
    return list(dict.fromkeys(shard_of(key, m) for m in counts))


@lru_cache(maxsize=None)
def lua(name):
    with open(os.path.join(CONTRACT_DIR, f"{name}.lua")) as f:
        return f.read()


def contract(r, name, K, i, *args):  # runs contract/<name>.lua on shard i of K (EVALSHA, loaded when missing)
    keys = [f"{K}:{i}", f"{{{K}:{i}}}:payloads", f"{{{K}:{i}}}:inflight", f"{{{K}:{i}}}:attempts", f"{{{K}:{i}}}:dead"]
    return r.register_script(lua(name))(keys=keys, args=args, client=r)


def schedule_plain(r, K, message, delay_ms):  # a plain ZADD, due time from Redis TIME
    i = shard_of(message, int(r.hget(f"{K}:meta", "shards") or 16))
    seconds, micros = r.time()
    due = seconds * 1000 + micros // 1000 + delay_ms
    r.zadd(f"{K}:{i}", {message: due})
    r.publish(f"{K}:wake", f"{i}:{due}")  # optional: without it the relay sees it within max-idle
    return due


def schedule_by_id(r, K, id, message, delay_ms, expiry=None, headers=None):
    # options (contract v2): expiry '' / epoch ms / "+ms" after due; headers {name: value}, e.g. {"traceparent": ...}
    options = []
    if expiry is not None or headers:
        options = [str(expiry or "")]
        for name, value in (headers or {}).items():
            if name.lower().startswith("x-delay-"):
                raise ValueError(f"header {name} is refused: the relay sets x-delay-* headers itself")
            options += [name, value]
    first, *earlier = shards_of(r, K, id)
    due = contract(r, "schedule", K, first, id, "after", delay_ms, f"{K}:wake", first, message, *options)
    for i in earlier:  # a copy scheduled before a shard-count change
        contract(r, "cancel", K, i, id)
    return due


def reschedule_by_id(r, K, id, delay_ms):  # the new due time, -1 when not scheduled
    for i in shards_of(r, K, id):
        due = contract(r, "reschedule", K, i, id, "after", delay_ms, f"{K}:wake", i)
        if due != -1:
            return due
    return -1


def cancel_by_id(r, K, id):  # True when cancelled
    return sum(contract(r, "cancel", K, i, id) for i in shards_of(r, K, id)) > 0


def main(command, *args):
    if command == "shard":
        return "\n".join(str(shard_of(key, int(args[0]))) for key in args[1:])
    import redis

    r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))
    if command == "schedule_plain":
        return schedule_plain(r, args[0], args[1], int(args[2]))
    if command == "schedule_by_id":
        expiry = args[4] if len(args) > 4 else None
        headers = dict(zip(args[5::2], args[6::2]))
        return schedule_by_id(r, args[0], args[1], args[2], int(args[3]), expiry, headers)
    if command == "reschedule_by_id":
        return reschedule_by_id(r, args[0], args[1], int(args[2]))
    if command == "cancel_by_id":
        return 1 if cancel_by_id(r, args[0], args[1]) else 0
    sys.exit(f"unknown command {command!r}: shard, schedule_plain, schedule_by_id, reschedule_by_id or cancel_by_id")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: delay.py COMMAND ARGS... (the commands are listed at the top of this file)")
    print(main(*sys.argv[1:]))
