package org.devicebridge.internal;

import java.util.function.Consumer;

/** Closing a group of resources: each one is closed even when closing another fails. */
public final class Closing {
    private Closing() {}

    /**
     * Closes each of {@code items} with {@code close}; the first failure is thrown once every item was tried,
     * with the later ones suppressed into it.
     */
    public static <T> void closeAll(Iterable<T> items, Consumer<? super T> close) {
        RuntimeException failure = null;
        for (T item : items) {
            try {
                close.accept(item);
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Closes each of {@code items} with {@code close} after {@code failure}, suppressing what a close throws into it. */
    public static <T> void closeAllAfter(Iterable<T> items, Consumer<? super T> close, Throwable failure) {
        for (T item : items) {
            try {
                close.accept(item);
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
    }
}
