package org.devicebridge.internal;

import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.cuda.Cuda;

/**
 * Run by {@link WorkerThreadsForkedTest} in a fresh JVM (the workers are configured once per process):
 * configures the workers as its argument says, runs jobs, and prints {@code RESULT} lines the test reads.
 */
public final class WorkerThreadsProbe {
    private static final InheritableThreadLocal<Object> INHERITED = new InheritableThreadLocal<>();

    private WorkerThreadsProbe() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        // the caller's context: a loader of its own and an inheritable thread-local, as in an application server
        ClassLoader appLoader = new URLClassLoader(new URL[0], WorkerThreadsProbe.class.getClassLoader());
        Thread.currentThread().setContextClassLoader(appLoader);
        INHERITED.set("caller's value");
        ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();
        AtomicInteger executed = new AtomicInteger();
        switch (mode) {
            case "size" -> Cuda.configureWorkers(3);
            case "executor" -> Cuda.configureWorkers(r -> {
                executed.incrementAndGet();
                held.add(r); // keeps every runnable and never runs one: the caller must do all the work
            });
            default -> { } // "property": -Ddevicebridge.workerThreads decides
        }
        Set<Thread> ran = ConcurrentHashMap.newKeySet();
        Set<String> contexts = ConcurrentHashMap.newKeySet();
        Object[] payload = {new byte[1 << 20]};
        WeakReference<Object> payloadRef = new WeakReference<>(payload[0]);
        for (int round = 0; round < 200; round++) {
            WorkerThreads.reduce(64, k -> {
                ran.add(Thread.currentThread());
                if (Thread.currentThread().getName().startsWith("devicebridge-worker-")) {
                    contexts.add(Thread.currentThread().getContextClassLoader() + "/" + INHERITED.get());
                }
                return payload[0] == null ? 0 : k;
            }, 0, Long::sum);
            WorkerThreads.startBeside(k -> {
                ran.add(Thread.currentThread());
                return 0;
            }).finish();
        }
        List<String> workers = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("devicebridge-worker-")) {
                workers.add(t.getName());
            }
        }
        System.out.println("RESULT workers " + workers.size());
        System.out.println("RESULT helpers " + WorkerThreads.helpers());
        System.out.println("RESULT onlyCaller " + (ran.size() == 1 && ran.contains(Thread.currentThread())));
        System.out.println("RESULT executed " + executed.get());
        System.out.println("RESULT workerContexts " + contexts);
        try {
            Cuda.configureWorkers(1);
            System.out.println("RESULT lateConfigure accepted");
        } catch (DeviceBridgeException e) {
            System.out.println("RESULT lateConfigure typed");
        }
        payload[0] = null;
        for (int i = 0; i < 20 && payloadRef.get() != null; i++) {
            System.gc();
            Thread.sleep(10);
        }
        // the executor still holds every runnable it was given: none may keep the caller's job alive
        System.out.println("RESULT payloadCollected " + (payloadRef.get() == null) + " held " + held.size());
    }
}
