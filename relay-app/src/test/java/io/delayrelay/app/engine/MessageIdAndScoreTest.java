package io.delayrelay.app.engine;

import java.nio.charset.StandardCharsets;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The per-message work on the publish path gives exactly what it gave before it was made cheaper. */
class MessageIdAndScoreTest {

    @Test
    void messageIdIsTheNameBasedUuidOfBusinessMemberAndDueTime() {
        String[] businesses = {"orders", "bestellungen-ü", "b"};
        byte[][] members = {"m-1".getBytes(StandardCharsets.UTF_8), new byte[] {0, -1, 7, 0}, new byte[0]};
        long[] dues = {1_763_897_000_123L, 0L, 7L, -42L, Long.MAX_VALUE, Long.MIN_VALUE};
        for (String business : businesses) {
            for (byte[] member : members) {
                for (long due : dues) {
                    assertThat(DueBatch.messageId(business, member, due))
                            .as("%s / %d", business, due)
                            .isEqualTo(nameUuid(business, member, due).toString());
                }
            }
        }
    }

    @Test
    void messageIdIsTheSameOnEveryThreadAndCall() throws Exception {
        byte[] member = "same".getBytes(StandardCharsets.UTF_8);
        String first = DueBatch.messageId("orders", member, 1_000L);
        String[] other = new String[1];
        Thread thread = new Thread(() -> other[0] = DueBatch.messageId("orders", member, 1_000L));
        thread.start();
        thread.join();
        assertThat(other[0]).isEqualTo(first);
        assertThat(DueBatch.messageId("orders", member, 1_000L)).isEqualTo(first);
        assertThat(DueBatch.messageId("orders", member, 1_001L)).isNotEqualTo(first);
    }

    @Test
    void scoresParseAsWholeMillisecondsAFractionRoundedUp() {
        assertThat(PopReply.parseScore(ascii("1763897000123"))).isEqualTo(1_763_897_000_123L);
        assertThat(PopReply.parseScore(ascii("0"))).isZero();
        assertThat(PopReply.parseScore(ascii("-15"))).isEqualTo(-15L);
        assertThat(PopReply.parseScore(ascii("1.5e+18"))).isEqualTo(1_500_000_000_000_000_000L);
        assertThat(PopReply.parseScore(ascii("12.75")))
                .as("due once reached: the next whole ms")
                .isEqualTo(13L);
        assertThat(PopReply.parseScore(ascii("1795904393621.5"))).isEqualTo(1_795_904_393_622L);
        assertThat(PopReply.parseScore(ascii("-12.75"))).isEqualTo(-12L);
        assertThat(PopReply.parseScore(ascii("123456789012345678901"))).isEqualTo((long) 123456789012345678901.0);
        assertThat(PopReply.parseScore(ascii("inf"))).isEqualTo(Long.MAX_VALUE);
        assertThat(PopReply.parseScore(ascii("+inf"))).isEqualTo(Long.MAX_VALUE);
        assertThat(PopReply.parseScore(ascii("-inf"))).isEqualTo(Long.MIN_VALUE);
    }

    private static UUID nameUuid(String business, byte[] member, long due) {
        byte[] name = business.getBytes(StandardCharsets.UTF_8);
        byte[] dueText = Long.toString(due).getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[name.length + 1 + member.length + 1 + dueText.length];
        System.arraycopy(name, 0, all, 0, name.length);
        System.arraycopy(member, 0, all, name.length + 1, member.length);
        System.arraycopy(dueText, 0, all, name.length + 2 + member.length, dueText.length);
        return UUID.nameUUIDFromBytes(all);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
