/**
 * The base of devicebridge: the owning handle and the exceptions. Start with {@link org.devicebridge.NativeHandle}.
 *
 * <p><b>One lifetime model.</b> Every segment the library hands out belongs to an FFM
 * {@link java.lang.foreign.Arena}, and closing that arena is what releases the foreign struct (an Arrow
 * {@code release}, a DLPack {@code deleter}, a {@code cuMemFreeHost}) as the arena's cleanup. Imports
 * either own their arena (no {@code Arena} argument: a confined one, owned by the thread that takes the
 * first segment; {@code close()} the handle there) or take the caller's (closing it releases every import
 * it holds). A close while a native call holds one of the segments throws
 * {@link org.devicebridge.HandleBusyException} and frees nothing; one from another thread than the owner of
 * an import's confined arena throws {@link org.devicebridge.HandleBusyException} (its cause a
 * {@link WrongThreadException}) and frees nothing.
 *
 * <p><b>One ownership rule.</b> {@code export…} gives ownership away, {@code import…} takes it,
 * {@code borrow…}/{@code view…} do neither. After an import returns, the returned handle (or the arena
 * passed) owns the input; after it throws, the input has been released; {@code HandleBusyException}
 * alone changes nothing.
 *
 * <p><b>One exception hierarchy.</b> Everything the library throws for bad input, unsupported features,
 * closed or busy handles, missing drivers or native access is a {@link org.devicebridge.DeviceBridgeException}.
 *
 * <p><b>Start here:</b> read {@link org.devicebridge.NativeHandle} (how a handle owns, releases and refuses
 * a busy close), then the package of the format you exchange: {@code org.devicebridge.arrow} (Arrow C
 * structs with FFM only), {@code org.devicebridge.arrow.java} (with Arrow Java), {@code org.devicebridge.dlpack}
 * (tensors), {@code org.devicebridge.cuda} (device memory), {@code org.devicebridge.python} (CPython).
 * Handles are safe to close from any thread, except an import without an arena once it handed out a
 * segment (its owner thread closes it); each type's comment says what else is thread-safe.
 */
package org.devicebridge;
