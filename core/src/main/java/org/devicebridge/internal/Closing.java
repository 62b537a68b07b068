package org.devicebridge.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

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

    /**
     * Takes {@code take} of each of {@code items}, all or none: after a throw, what was taken is given back with
     * {@code release} (what that throws is suppressed into the failure).
     */
    public static <S, T> List<T> takeAll(Iterable<S> items, Function<? super S, T> take, Consumer<? super T> release) {
        List<T> taken = new ArrayList<>();
        try {
            for (S item : items) {
                taken.add(take.apply(item));
            }
        } catch (RuntimeException | Error e) {
            closeAllAfter(taken, release, e);
            throw e;
        }
        return taken;
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
