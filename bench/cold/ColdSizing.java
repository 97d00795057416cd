import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdDictCompress;
import com.github.luben.zstd.ZstdDictTrainer;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import net.jpountz.lz4.LZ4Factory;

/**
 * Sizing of the cold-tier candidates (docs/cold-tier.md): bytes per entry of n realistic ~100 B JSON order messages
 * due in 7-30 days, today's hot representation against time-bucketed blocks, raw, lz4, zstd, zstd with a dictionary
 * and deflate with a preset dictionary. Run on a private, empty redis-server (it is flushed):
 *
 * <pre>java -cp zstd-jni.jar:lz4-java.jar bench/cold/ColdSizing.java 1000000 6431</pre>
 */
public class ColdSizing {
    static final String[] ACTIONS = {"review", "auto-close", "remind", "renew", "expire", "follow-up"};
    static final String[] CUR = {"EUR", "USD", "GBP", "CNY", "JPY"};
    static final String[] STATUS = {"PAID", "SHIPPED", "DELIVERED", "OPEN"};

    record E(String id, long due, byte[] msg, int shard) {}

    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        int port = Integer.parseInt(a[1]);
        int shards = 16;
        Random r = new Random(27);
        long now = 1_795_000_000_000L;
        List<E> es = new ArrayList<>(n);
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            long orderNo = 100_000_000L + r.nextInt(900_000_000);
            String id = "order-" + orderNo;
            long due = now + 7L * 86_400_000 + (long) (r.nextDouble() * 23L * 86_400_000);
            String msg = String.format(
                    "{\"orderId\":%d,\"userId\":%d,\"action\":\"%s\",\"amount\":%d.%02d,\"currency\":\"%s\",\"status\":\"%s\",\"sku\":\"SKU-%05d\"}",
                    orderNo, 1_000_000 + r.nextInt(9_000_000), ACTIONS[r.nextInt(ACTIONS.length)], r.nextInt(2000), r.nextInt(100),
                    CUR[r.nextInt(CUR.length)], STATUS[r.nextInt(STATUS.length)], r.nextInt(100_000));
            byte[] m = msg.getBytes(StandardCharsets.UTF_8);
            bytes += m.length;
            CRC32 c = new CRC32();
            c.update(id.getBytes(StandardCharsets.UTF_8));
            es.add(new E(id, due, m, (int) (c.getValue() % shards)));
        }
        System.out.printf("entries %d, mean message %.1f B, example %s%n", n, bytes / (double) n, new String(es.get(0).msg()));

        // 1. today: zset member = id, payload hash by id; and plain member = message
        redis(port, "FLUSHALL");
        long base = usedMemory(port);
        pipe(port, out -> {
            for (E e : es) {
                cmd(out, "ZADD", "dq:" + e.shard(), Long.toString(e.due()), e.id());
                cmd(out, "HSET", "{dq:" + e.shard() + "}:payloads", e.id(), e.msg());
            }
        });
        System.out.printf("hot by id (zset + payload hash): %.1f B/entry%n", (usedMemory(port) - base) / (double) n);
        redis(port, "FLUSHALL");
        base = usedMemory(port);
        pipe(port, out -> {
            for (E e : es) {
                cmd(out, "ZADD", "dq:" + e.shard(), Long.toString(e.due()), e.msg());
            }
        });
        System.out.printf("hot plain (member = message): %.1f B/entry%n", (usedMemory(port) - base) / (double) n);

        // 2. blocks: per shard and bucket of due times, at most `cap` entries a block
        List<byte[]> samples = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) samples.add(es.get(i).msg());
        byte[] dict = train(samples, 16 * 1024);
        ZstdDictCompress zd = new ZstdDictCompress(dict, 3);
        for (long bucketMs : new long[] {3_600_000L, 6 * 3_600_000L}) {
            for (int cap : new int[] {1000, 20}) {
                List<byte[]> blocks = blocks(es, shards, bucketMs, cap);
                long raw = 0, lz4 = 0, z3 = 0, z19 = 0, zdict = 0, defl = 0, defDict = 0;
                long t0 = System.nanoTime();
                for (byte[] b : blocks) raw += b.length;
                for (byte[] b : blocks) lz4 += LZ4Factory.fastestInstance().fastCompressor().compress(b).length;
                long t1 = System.nanoTime();
                for (byte[] b : blocks) z3 += Zstd.compress(b, 3).length;
                long t2 = System.nanoTime();
                for (byte[] b : blocks) z19 += Zstd.compress(b, 19).length;
                for (byte[] b : blocks) zdict += Zstd.compress(b, zd).length;
                long t3 = System.nanoTime();
                for (byte[] b : blocks) defl += deflate(b, null);
                for (byte[] b : blocks) defDict += deflate(b, dict);
                System.out.printf("bucket %dh, <= %d a block: %d blocks; B/entry raw %.1f lz4 %.1f zstd3 %.1f zstd19 %.1f zstd3+dict %.1f deflate %.1f deflate+dict %.1f"
                                + " (zstd3 %.2f us/entry, zstd3+dict %.2f us/entry)%n",
                        bucketMs / 3_600_000, cap, blocks.size(), raw / (double) n, lz4 / (double) n, z3 / (double) n, z19 / (double) n,
                        zdict / (double) n, defl / (double) n, defDict / (double) n, (t2 - t1) / 1e3 / n, (t3 - t2) / 1e3 / n / 2);
            }
        }
        // 3. what Redis holds for the chosen layout: zstd+dict blocks in a hash per shard, block index zset per shard,
        //    member index split into `fan` small hashes per shard (listpack encoded)
        for (int fan : new int[] {256, 1024}) {
            for (int cap : new int[] {1000}) {
                redis(port, "FLUSHALL");
                base = usedMemory(port);
                Map<String, List<E>> groups = group(es, shards, 6 * 3_600_000L, cap);
                int[] blockNo = new int[shards];
                pipe(port, out -> {
                    for (List<E> g : groups.values()) {
                        int s = g.get(0).shard();
                        String id = Integer.toString(++blockNo[s]);
                        cmd(out, "HSET", "{dq:" + s + "}:cold-blocks", id, Zstd.compress(encode(g), zd));
                        cmd(out, "ZADD", "{dq:" + s + "}:cold", Long.toString(g.get(0).due()), id);
                        for (E e : g) {
                            cmd(out, "HSET", "{dq:" + s + "}:cold-ix:" + slot(e.id(), fan), e.id(), id);
                        }
                    }
                });
                System.out.printf("redis, zstd3+dict blocks (6h, <= %d), member index fan %d per shard: %.1f B/entry (blocks %d)%n",
                        cap, fan, (usedMemory(port) - base) / (double) n, groups.size());
            }
        }
        redis(port, "FLUSHALL");
    }

    static int slot(String member, int fan) throws Exception {
        byte[] h = MessageDigest.getInstance("SHA-1").digest(member.getBytes(StandardCharsets.UTF_8));
        return (((h[0] & 0xff) << 8) | (h[1] & 0xff)) % fan;
    }

    static Map<String, List<E>> group(List<E> es, int shards, long bucketMs, int cap) {
        Map<String, List<E>> g = new TreeMap<>();
        List<E> sorted = new ArrayList<>(es);
        sorted.sort((x, y) -> Long.compare(x.due(), y.due()));
        Map<String, Integer> part = new TreeMap<>();
        for (E e : sorted) {
            String k = e.shard() + ":" + e.due() / bucketMs;
            int p = part.getOrDefault(k, 0);
            List<E> l = g.get(k + ":" + p);
            if (l != null && l.size() >= cap) {
                part.put(k, ++p);
                l = null;
            }
            g.computeIfAbsent(k + ":" + p, x -> new ArrayList<>()).add(e);
        }
        return g;
    }

    static List<byte[]> blocks(List<E> es, int shards, long bucketMs, int cap) {
        List<byte[]> out = new ArrayList<>();
        for (List<E> g : group(es, shards, bucketMs, cap).values()) out.add(encode(g));
        return out;
    }

    /** Columnar: count, due deltas (varint), member lengths + members, payload lengths + payloads. */
    static byte[] encode(List<E> g) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        long first = g.get(0).due();
        varint(b, g.size());
        varint(b, first);
        for (E e : g) varint(b, e.due() - first);
        for (E e : g) {
            byte[] id = e.id().getBytes(StandardCharsets.UTF_8);
            varint(b, id.length);
            b.writeBytes(id);
        }
        for (E e : g) {
            varint(b, e.msg().length + 1);
            b.writeBytes(e.msg());
        }
        return b.toByteArray();
    }

    static void varint(ByteArrayOutputStream b, long v) {
        while ((v & ~0x7fL) != 0) {
            b.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        b.write((int) v);
    }

    static byte[] train(List<byte[]> samples, int size) {
        ZstdDictTrainer t = new ZstdDictTrainer(samples.size() * 120, size);
        for (byte[] s : samples) t.addSample(s);
        return t.trainSamples();
    }

    static int deflate(byte[] b, byte[] dict) {
        Deflater d = new Deflater(6);
        if (dict != null) d.setDictionary(dict);
        d.setInput(b);
        d.finish();
        byte[] buf = new byte[b.length + 64];
        int len = 0;
        while (!d.finished()) len += d.deflate(buf);
        d.end();
        return len;
    }

    interface Writer {
        void write(OutputStream out) throws Exception;
    }

    static void pipe(int port, Writer w) throws Exception {
        Process p = new ProcessBuilder("redis-cli", "-p", Integer.toString(port), "--pipe").redirectErrorStream(true).start();
        try (OutputStream out = new BufferedOutputStream(p.getOutputStream(), 1 << 20)) {
            w.write(out);
        }
        String res = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        if (!res.contains("errors: 0")) throw new IllegalStateException(res);
    }

    static void cmd(OutputStream out, Object... args) throws Exception {
        out.write(("*" + args.length + "\r\n").getBytes());
        for (Object o : args) {
            byte[] v = o instanceof byte[] bb ? bb : o.toString().getBytes(StandardCharsets.UTF_8);
            out.write(("$" + v.length + "\r\n").getBytes());
            out.write(v);
            out.write("\r\n".getBytes());
        }
    }

    static String redis(int port, String... args) throws Exception {
        List<String> c = new ArrayList<>(List.of("redis-cli", "-p", Integer.toString(port)));
        c.addAll(List.of(args));
        Process p = new ProcessBuilder(c).start();
        String s = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        return s;
    }

    static long usedMemory(int port) throws Exception {
        for (String line : redis(port, "INFO", "memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) return Long.parseLong(line.substring(12).trim());
        }
        throw new IllegalStateException("no used_memory");
    }
}
