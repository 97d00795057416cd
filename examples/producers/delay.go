// A producer in Go with go-redis v9: the shard rule (CRC32 mod M, earlier counts from K:meta's history) and the
// contract's Lua scripts (schedule, reschedule, cancel by id; a plain ZADD with its wake-up). NOT run by the build
// (no Go toolchain or module source where it is built): the shell, Python and Node producers beside it are.
//
// Try it from this folder: go mod init producer && go get github.com/redis/go-redis/v9 && go run delay.go COMMAND ...
// Connects to REDIS_HOST:REDIS_PORT (default 127.0.0.1:6379); reads the scripts from CONTRACT_DIR (default
// ../../contract, the repository's contract/ folder seen from here). Commands as in delay.sh: shard M KEY... |
// schedule_plain K MESSAGE DELAY_MS | schedule_by_id K ID MESSAGE DELAY_MS [EXPIRY [NAME VALUE]...] |
// reschedule_by_id K ID DELAY_MS | cancel_by_id K ID. EXPIRY ('' none, epoch ms, +MS after due) and AMQP headers
// (e.g. traceparent) are per-message options (contract v2).
package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

func shardOf(key string, m int) int { return int(crc32.ChecksumIEEE([]byte(key)) % uint32(m)) }

// shardsOf: the shard under the current count first, then under earlier counts (K:meta history)
func shardsOf(ctx context.Context, rdb *redis.Client, K, key string) ([]int, error) {
	meta, err := rdb.HMGet(ctx, K+":meta", "shards", "history").Result()
	if err != nil {
		return nil, err
	}
	counts := []int{16}
	if s, ok := meta[0].(string); ok {
		counts[0], _ = strconv.Atoi(s)
	}
	if h, ok := meta[1].(string); ok && h != "" {
		for _, c := range strings.Split(h, ",") {
			n, _ := strconv.Atoi(c)
			counts = append(counts, n)
		}
	}
	var shards []int
	seen := map[int]bool{}
	for _, m := range counts {
		if i := shardOf(key, m); !seen[i] {
			seen[i] = true
			shards = append(shards, i)
		}
	}
	return shards, nil
}

var scripts = map[string]*redis.Script{} // filled on first use: load them at start-up when used from many goroutines

// contract runs contract/<name>.lua on shard i of K (EVALSHA, loaded when missing)
func contract(ctx context.Context, rdb *redis.Client, name, K string, i int, args ...interface{}) (int64, error) {
	script, ok := scripts[name]
	if !ok {
		src, err := os.ReadFile(filepath.Join(contractDir(), name+".lua"))
		if err != nil {
			return 0, err
		}
		script = redis.NewScript(string(src))
		scripts[name] = script
	}
	s := fmt.Sprintf("%s:%d", K, i)
	keys := []string{s, "{" + s + "}:payloads", "{" + s + "}:inflight", "{" + s + "}:attempts", "{" + s + "}:dead"}
	return script.Run(ctx, rdb, keys, args...).Int64()
}

func schedulePlain(ctx context.Context, rdb *redis.Client, K string, message string, delayMs int64) (int64, error) {
	m, err := rdb.HGet(ctx, K+":meta", "shards").Int()
	if err != nil {
		m = 16
	}
	i := shardOf(message, m)
	now, err := rdb.Time(ctx).Result() // Redis TIME, not the host clock
	if err != nil {
		return 0, err
	}
	due := now.UnixMilli() + delayMs
	if err := rdb.ZAdd(ctx, fmt.Sprintf("%s:%d", K, i), redis.Z{Score: float64(due), Member: message}).Err(); err != nil {
		return 0, err
	}
	rdb.Publish(ctx, K+":wake", fmt.Sprintf("%d:%d", i, due)) // optional: without it, picked up within max-idle
	return due, nil
}

// scheduleByID schedules message under id. options (contract v2, optional): the expiry ('' none, epoch ms, or
// "+ms" after the due time), then AMQP header name, value pairs (e.g. "traceparent", "00-..."); x-delay-* is refused.
func scheduleByID(ctx context.Context, rdb *redis.Client, K, id, message string, delayMs int64, options ...string) (int64, error) {
	for j := 1; j < len(options); j += 2 {
		if strings.HasPrefix(strings.ToLower(options[j]), "x-delay-") {
			return 0, fmt.Errorf("header %s is refused: the relay sets x-delay-* headers itself", options[j])
		}
	}
	shards, err := shardsOf(ctx, rdb, K, id)
	if err != nil {
		return 0, err
	}
	args := []interface{}{id, "after", delayMs, K + ":wake", shards[0], message}
	for _, o := range options {
		args = append(args, o)
	}
	due, err := contract(ctx, rdb, "schedule", K, shards[0], args...)
	for _, i := range shards[1:] { // a copy scheduled before a shard-count change
		if err == nil {
			_, err = contract(ctx, rdb, "cancel", K, i, id)
		}
	}
	return due, err
}

func rescheduleByID(ctx context.Context, rdb *redis.Client, K, id string, delayMs int64) (int64, error) {
	shards, err := shardsOf(ctx, rdb, K, id)
	if err != nil {
		return 0, err
	}
	for _, i := range shards {
		due, err := contract(ctx, rdb, "reschedule", K, i, id, "after", delayMs, K+":wake", i)
		if err != nil || due != -1 {
			return due, err
		}
	}
	return -1, nil
}

func cancelByID(ctx context.Context, rdb *redis.Client, K, id string) (bool, error) {
	shards, err := shardsOf(ctx, rdb, K, id)
	removed := false
	for _, i := range shards {
		if err != nil {
			break
		}
		var n int64
		n, err = contract(ctx, rdb, "cancel", K, i, id)
		removed = removed || n == 1
	}
	return removed, err
}

func contractDir() string {
	if dir := os.Getenv("CONTRACT_DIR"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "contract")
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run delay.go COMMAND ARGS... (the commands are listed at the top of this file)")
		os.Exit(2)
	}
	command, args := os.Args[1], os.Args[2:]
	if command == "shard" {
		m, _ := strconv.Atoi(args[0])
		for _, key := range args[1:] {
			fmt.Println(shardOf(key, m))
		}
		return
	}
	ctx := context.Background()
	host, port := os.Getenv("REDIS_HOST"), os.Getenv("REDIS_PORT")
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: host + ":" + port})
	defer rdb.Close()
	var out interface{}
	var err error
	switch command {
	case "schedule_plain":
		delay, _ := strconv.ParseInt(args[2], 10, 64)
		out, err = schedulePlain(ctx, rdb, args[0], args[1], delay)
	case "schedule_by_id":
		delay, _ := strconv.ParseInt(args[3], 10, 64)
		out, err = scheduleByID(ctx, rdb, args[0], args[1], args[2], delay, args[4:]...)
	case "reschedule_by_id":
		delay, _ := strconv.ParseInt(args[2], 10, 64)
		out, err = rescheduleByID(ctx, rdb, args[0], args[1], delay)
	case "cancel_by_id":
		var removed bool
		removed, err = cancelByID(ctx, rdb, args[0], args[1])
		out = 0
		if removed {
			out = 1
		}
	default:
		err = fmt.Errorf("unknown command %s: shard, schedule_plain, schedule_by_id, reschedule_by_id or cancel_by_id", command)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(out)
}
