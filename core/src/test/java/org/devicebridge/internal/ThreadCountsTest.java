package org.devicebridge.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class ThreadCountsTest {

    @Test
    void aSumAddsEveryThreadsSlotsIncludingThoseOfEndedThreads() throws InterruptedException {
        ThreadCounts counts = new ThreadCounts(2);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Thread thread = new Thread(() -> {
                for (int i = 0; i < 10_000; i++) {
                    counts.add(0, 1);
                    counts.add(1, 3);
                }
            });
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(counts.sum(0)).isEqualTo(80_000);
        assertThat(counts.sum(1)).isEqualTo(240_000);
        counts.add(0, -80_000); // a free on another thread than the allocation: the sum is what matters
        assertThat(counts.sum(0)).isZero();
        assertThat(counts.sum(1)).isEqualTo(240_000); // the ended threads' slots were folded, not lost
    }

    @Test
    void aThreadStillRunningIsCountedWhenItHasStoppedAdding() throws InterruptedException {
        ThreadCounts counts = new ThreadCounts(1);
        CountDownLatch added = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        Thread thread = new Thread(() -> {
            counts.add(0, 5);
            added.countDown();
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        thread.start();
        added.await();
        assertThat(counts.sum(0)).isEqualTo(5);
        done.countDown();
        thread.join();
        assertThat(counts.sum(0)).isEqualTo(5);
    }

    @Test
    void virtualThreadsAddToTheSharedSlots() throws InterruptedException {
        ThreadCounts counts = new ThreadCounts(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 100; t++) {
            threads.add(Thread.ofVirtual().start(() -> counts.add(0, 2)));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(counts.sum(0)).isEqualTo(200);
    }

    @Test
    void atLeastOneSlot() {
        assertThatThrownBy(() -> new ThreadCounts(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
