#!/usr/bin/python3
"""What a pop costs Redis: the time pop.lua runs for one call over 16 shards, per shard and per entry taken.

Starts a private redis-server (POP_COST_PORT, default 18321), fills 16 shards with 500 far-future entries each (the
size of a shard at 2,000 msg/s due 1-5 s ahead), then ITERATIONS times: writes E due entries into every shard (a
pipeline, not measured), runs the relay's pop.lua over the 16 shards as the relay does (not known due: with the
emptiness probe), and removes the leases (not measured). Prints Redis's own time for the script (INFO commandstats
usec of EVALSHA; on a machine with nothing else running that is its CPU), per call, per shard and per entry, for
E = 1, 3 and 10, and the straight line through them: a fixed cost per shard popped plus a cost per entry taken.
Needs redis-server and the redis module of Debian's python3 (apt-get install python3-redis).
"""
import os
import subprocess
import sys
import tempfile
import time

import redis

PORT = int(os.environ.get("POP_COST_PORT", "18321"))
ITERATIONS = int(os.environ.get("POP_COST_ITERATIONS", "1500"))
SHARDS = 16
HERE = os.path.dirname(os.path.abspath(__file__))
POP = os.path.join(HERE, "..", "relay-app", "src", "main", "resources", "io", "delayrelay", "app", "lua", "pop.lua")


def script(path):
    """The script's text with each '-- include: lib/x.lua' line replaced by that fragment, as the relay loads it."""
    folder = os.path.dirname(path)
    lines = []
    for line in open(path).read().splitlines(keepends=True):
        if line.startswith("-- include: "):
            lines.append(open(os.path.join(folder, line[len("-- include: "):].strip())).read())
        else:
            lines.append(line)
    return "".join(lines)


def shard_keys(i):
    k = "popcost:%d" % i
    return [k] + ["{%s}:%s" % (k, s) for s in ("payloads", "inflight", "attempts", "dead", "dead-reasons")]


def measure(r, sha, per):
    keys = [k for i in range(SHARDS) for k in shard_keys(i)]
    spent = 0
    for it in range(ITERATIONS):
        p = r.pipeline(transaction=False)
        now = int(time.time() * 1000)
        for i in range(SHARDS):
            p.zadd("popcost:%d" % i, {"due-%d-%d-%d-%s" % (it, i, j, "y" * 80): now - 1 for j in range(per)})
        p.execute()
        before = r.info("commandstats")["cmdstat_evalsha"]["usec"] if it else 0
        # batch size, lease ms, token, recheck ms, byte budget, known flags, max lateness, on-late, ack sections, lead
        r.evalsha(sha, len(keys), *keys, 10000, 30000, "token-%d" % it, 50, 0, "0" * SHARDS, "", "dead", "0", "0")
        if it:
            spent += r.info("commandstats")["cmdstat_evalsha"]["usec"] - before
        p = r.pipeline(transaction=False)
        for i in range(SHARDS):
            p.delete(shard_keys(i)[2], shard_keys(i)[3])
        p.execute()
    call = spent / (ITERATIONS - 1)
    return call, call / SHARDS


def main():
    if subprocess.run(["redis-cli", "-p", str(PORT), "ping"], capture_output=True).returncode == 0:
        sys.exit("error: port %d is in use; set POP_COST_PORT" % PORT)
    workdir = tempfile.mkdtemp()
    server = subprocess.Popen(["redis-server", "--port", str(PORT), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", workdir, "--notify-keyspace-events", "Kz"],
                              stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=PORT)
        for _ in range(50):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        sha = r.script_load(script(POP))
        p = r.pipeline(transaction=False)
        for i in range(SHARDS):
            p.zadd("popcost:%d" % i, {"far-%d-%d-%s" % (i, j, "x" * 80): 1_900_000_000_000 + j for j in range(500)})
        p.execute()
        points = []
        for per in (1, 3, 10):
            call, shard = measure(r, sha, per)
            points.append((per, shard))
            print("entries per shard %2d: %6.1f µs per call of %d shards, %5.1f per shard, %5.2f per entry"
                  % (per, call, SHARDS, shard, shard / per))
        slope = (points[2][1] - points[0][1]) / (points[2][0] - points[0][0])
        print("fit: %.1f µs per shard popped + %.2f µs per entry taken" % (points[0][1] - slope, slope))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
