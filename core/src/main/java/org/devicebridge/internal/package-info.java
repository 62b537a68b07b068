/**
 * FFM plumbing below every public package (not exported): libc calls, upcall stubs, the one reference count,
 * the one export registry, handle bookkeeping, counters. It imports only {@code java.*} and
 * {@code org.devicebridge.generated.*}, and throws only JDK exceptions; the public packages translate them.
 */
package org.devicebridge.internal;
