package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ArrayData;

/**
 * {@link ArrowJava#viewRoot}: the root planned by the export's own planner ({@link ExportArrayWriter#planRoot},
 * with its checks and rewrites), then described as an {@link ArrayData} instead of written into C structs.
 * The plan's references are taken as the export takes them (one per allocation, the rewritten buffers'
 * included) and dropped by the arena's close instead of a consumer's {@code release}.
 */
final class ArrowJavaView {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    private ArrowJavaView() {}

    static ArrayData root(VectorSchemaRoot root, DictionaryProvider provider, Arena arena) {
        requireNativeAccess();
        requireArrowJava("ArrowJava.viewRoot");
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(arena, "arena");
        if (!arena.scope().isAlive()) {
            throw new HandleClosedException("arena: the arena is already closed");
        }
        ArrayExportPlan p = ArrayExportPlan.take();
        try {
            ExportArrayWriter.planRoot(p, root, provider);
            ArrayData data;
            try {
                data = describe(p, 0, arena);
            } catch (IllegalStateException | WrongThreadException e) {
                throw arenaUnusable(e);
            }
            hold(p, arena);
            return data;
        } finally {
            ArrayExportPlan.done(p); // the plan's own reference to each rewritten buffer; the arena holds another
        }
    }

    /** Node {@code node} of the plan and everything below it, its buffers as segments of {@code arena}. */
    private static ArrayData describe(ArrayExportPlan p, int node, Arena arena) {
        int nb = p.bufferCount[node];
        List<MemorySegment> buffers = new ArrayList<>(nb);
        for (int b = 0; b < nb; b++) {
            int k = p.firstBuffer[node] + b;
            long address = p.buffers[k];
            if (address == ExportBlock.VARIADIC_SIZES) {
                buffers.add(variadicSizes(p, node, arena));
            } else if (address == 0) {
                buffers.add(MemorySegment.NULL);
            } else {
                // sized from the ArrowBuf's capacity, which the planner read: what may be read, not the exact size
                buffers.add(MemorySegment.ofAddress(address).reinterpret(p.capacities[k], arena, null).asReadOnly());
            }
        }
        ArrayData out = ArrayData.of(p.length[node], p.nullCount[node], buffers);
        int children = p.childCount[node];
        if (children > 0) {
            List<ArrayData> list = new ArrayList<>(children);
            for (int c = 0; c < children; c++) {
                list.add(describe(p, p.firstDependent[node] + c, arena));
            }
            out = out.withChildren(list);
        }
        int dictionary = p.dictionaryOf(node);
        return dictionary < 0 ? out : out.withDictionary(describe(p, dictionary, arena));
    }

    /** The sizes of a view node's variadic buffers, which the export keeps in its block: here in {@code arena}. */
    private static MemorySegment variadicSizes(ArrayExportPlan p, int node, Arena arena) {
        int count = p.variadicCount[node];
        MemorySegment sizes = arena.allocate(ValueLayout.JAVA_LONG, count);
        MemorySegment.copy(p.variadic, p.firstVariadic[node], sizes, ValueLayout.JAVA_LONG, 0L, count);
        return sizes.asReadOnly();
    }

    /**
     * Takes the plan's references (as the export does) and hands them to {@code arena}: its close drops them.
     * After a throw none is held.
     */
    private static void hold(ArrayExportPlan p, Arena arena) {
        ExportBlock.retainAll(p);
        ArrowBuf[] held = p.takeRetained();
        try {
            MemorySegment.NULL.reinterpret(arena, ignored -> drop(held));
        } catch (IllegalStateException | WrongThreadException e) {
            ExportBlock.releaseAll(held, held.length);
            throw arenaUnusable(e);
        } catch (RuntimeException | Error e) {
            ExportBlock.releaseAll(held, held.length);
            throw e;
        }
    }

    /** The arena's cleanup: never throws (it runs inside {@code Arena.close}); a failure is logged. */
    private static void drop(ArrowBuf[] held) {
        for (ArrowBuf b : held) {
            try {
                b.getReferenceManager().release();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "devicebridge: dropping a viewed Arrow buffer failed", t);
            }
        }
    }

    /** The arena was closed meanwhile, or is confined to another thread. */
    private static RuntimeException arenaUnusable(RuntimeException e) {
        if (e instanceof WrongThreadException) {
            return new InvalidArgumentException("arena", "expected an arena this thread may use but found one"
                    + " confined to another thread");
        }
        return new HandleClosedException("arena: the arena was closed while the root was viewed", e);
    }
}
