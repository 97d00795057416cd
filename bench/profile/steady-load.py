#!/usr/bin/python3
"""A steady producer and consumer for profile-steady.sh: RATE messages/s written with plain ZADD (pipelined every
10 ms, as a producer flushing an outbox does) into SHARDS shards, due 1-5 s ahead, and a consumer counting what the
relay publishes. Prints "sent N received M" at the end; M < N means messages were lost or late (the consumer waits
8 s after the last send).

usage: steady-load.py <redis port> <rate> <seconds> <source key> <exchange> <shards>
Needs the redis and pika modules of Debian's python3 (apt-get install python3-redis python3-pika).
"""
import random
import sys
import threading
import time
import zlib

import pika
import redis

port, rate, seconds, key, exchange, shards = (int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4],
                                               sys.argv[5], int(sys.argv[6]))
received = [0]
ready = threading.Event()


def consume():
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    channel = connection.channel()
    queue = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(queue, exchange, "due")
    channel.basic_qos(prefetch_count=500)

    def count(_channel, _method, _properties, _body):
        received[0] += 1

    channel.basic_consume(queue, count, auto_ack=True)
    ready.set()
    end = time.time() + seconds + 8
    while time.time() < end:
        connection.process_data_events(time_limit=0.5)


threading.Thread(target=consume, daemon=True).start()
ready.wait(10)
r = redis.Redis(port=port)
start = time.time()
sent = 0
while time.time() - start < seconds:
    target = int((time.time() - start) * rate)
    pipe = r.pipeline(transaction=False)
    now = int(time.time() * 1000)
    while sent < target:
        member = b"steady-%d" % sent
        # the contract's shard: CRC32 of the member's bytes mod the shard count
        pipe.zadd("%s:%d" % (key, zlib.crc32(member) % shards), {member: now + random.randint(1000, 5000)})
        sent += 1
    pipe.execute()
    time.sleep(0.01)
time.sleep(7)
print("sent %d received %d" % (sent, received[0]))
