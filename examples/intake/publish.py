#!/usr/bin/env python3
"""Publishes delayed messages to a delay-relay AMQP intake with pika, exactly as to the old x-delayed-message
exchange: the only change a publisher makes is the exchange it declares (none: the relay declares the intake's).

Usage: publish.py <host> <port> <exchange> <count> <id-prefix> <delay-ms> [<interval-ms>]
Each message i gets message id <id-prefix><i>, routing key orders.<i % 3>, a header tenant=acme and
x-delay = <delay-ms> + 10 * (i % 100). Prints one line per message: "<id> <epoch ms sent> <x-delay>".
"""
import sys
import time

import pika


def main():
    host, port, exchange = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    count, prefix, delay = int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
    interval = int(sys.argv[7]) / 1000 if len(sys.argv) > 7 else 0
    connection = pika.BlockingConnection(pika.ConnectionParameters(host=host, port=port))
    channel = connection.channel()
    channel.confirm_delivery()  # each publish returns once the broker has the message
    for i in range(count):
        x_delay = delay + 10 * (i % 100)
        sent = int(time.time() * 1000)
        channel.basic_publish(
            exchange=exchange,
            routing_key=f"orders.{i % 3}",
            body=f'{{"order":{i}}}'.encode(),
            properties=pika.BasicProperties(
                message_id=f"{prefix}{i}",
                content_type="application/json",
                delivery_mode=2,  # persistent
                headers={"x-delay": x_delay, "tenant": "acme"},
            ),
        )
        print(f"{prefix}{i} {sent} {x_delay}", flush=True)
        if interval:
            time.sleep(interval)
    connection.close()


if __name__ == "__main__":
    main()
