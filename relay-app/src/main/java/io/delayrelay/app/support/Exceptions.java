package io.delayrelay.app.support;

/** Turns exceptions into the short text a log line or a dead letter carries. */
public final class Exceptions {

    private Exceptions() {}

    /**
     * The innermost cause as {@code "SimpleName: message"}: a Redis or broker failure arrives wrapped by Spring and
     * the client library several times over, and only the root says what went wrong.
     */
    public static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getMessage();
        return root.getClass().getSimpleName() + (text == null ? "" : ": " + text);
    }
}
