package org.devicebridge.internal;

/**
 * 64 bytes laid out before the fields of a subclass (a superclass's fields come first in an object). A
 * per-thread object that its thread writes on every operation extends this, and its subclass adds 64 bytes
 * after its fields, so that the object shares no cache line with another thread's: the GC copies long-lived
 * objects of different threads next to each other, and a line written by one thread and read or written by
 * another moves between cores on every operation (false sharing).
 */
@SuppressWarnings("unused")
public abstract class CacheLinePadding {
    private long p0, p1, p2, p3, p4, p5, p6, p7;
    // fills the gap a 12-byte object header leaves before the longs, where the JVM would otherwise place a
    // small field of the subclass, next to whatever object lies before this one
    private int p8;

    protected CacheLinePadding() {}
}
