package org.devicebridge.fuzz;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;

/**
 * Deterministic structure-aware generator of ArrowSchema + ArrowArray (or ArrowDeviceArray) trees: a seed
 * gives a mostly valid tree of a random Arrow type (so that many inputs are accepted and their values
 * read), then zero to four random mutations of struct fields, pointers, format strings and buffer
 * contents. Memory-safety contract: see {@link Fuzz}. Strings, binaries and lists are generated with int64
 * offsets (Z, U, +L): an int32 offsets buffer read as int64 through a mutated format or a swapped child
 * would claim gigabytes the importer cannot know are missing, whereas int64 offsets read as int32 stay
 * small. List views and dense unions (int32 offsets) are generated in a quarter of the inputs, which then
 * get no format mutation to an int64-offset layout and no child, dictionary or buffer swaps; the other
 * int32 layouts (z, u, +l, +m, views, run-end encoded) are reached through format mutations.
 *
 * <p>{@link #generateExact} builds valid trees without mutations for {@link MalformedArrow}, with every
 * layout generated directly (int32 offsets, views, run-end encoded), and records each node it built
 * ({@link Built}) so that one corruption can be applied at a known place.
 */
final class ArrowFuzz {
    /** Largest length or offset a node or a mutation ever claims: (64 + 64) elements of at most 96 bytes fit a buffer. */
    static final int MAX_COUNT = 64;
    /**
     * Exact mode: the most elements a node gets (children are as long as their parent needs, so a fixed-size
     * list that would make more becomes a struct): 256 elements of at most 32 bytes fit a buffer.
     */
    static final int EXACT_MAX_COUNT = 256;

    /** One generated input. */
    static final class Input {
        MemorySegment schema;
        MemorySegment array;      // ArrowArray, or the ArrowDeviceArray when device
        boolean device;
        boolean schemaReleased;   // generated with release == NULL
        boolean arrayReleased;
        /** The tree holds int32 offsets (list views, dense unions): mutations that could reread them as int64 are off. */
        boolean narrowOffsets;
        final List<String> mutations = new ArrayList<>();
        /** The root node as built (before any mutation). */
        Built root;
    }

    /** Whether a node is generated with a validity bitmap with nulls, without one, or either. */
    enum Nulls { RANDOM, NONE, SOME }

    /**
     * A type: format, children, optional dictionary value type (this node then is the index type), and
     * whether its node gets nulls.
     */
    record Type(String format, List<Type> children, Type dictionary, Nulls nulls) {
        Type(String format, List<Type> children, Type dictionary) {
            this(format, children, dictionary, Nulls.RANDOM);
        }

        static Type leaf(String format) {
            return new Type(format, List.of(), null);
        }

        Type withNulls(Nulls n) {
            return new Type(format, children, dictionary, n);
        }
    }

    /**
     * One node as the generator wrote it: its structs, the counts it claims and its buffers (each a whole
     * {@link Fuzz#BUFFER_CAPACITY} segment, or NULL), children and dictionary. {@link MalformedArrow}
     * corrupts exactly one thing of one such node.
     */
    record Built(Type type, MemorySegment schema, MemorySegment array, long length, long offset,
                 List<MemorySegment> buffers, MemorySegment bufferPointers, List<Built> children, Built dictionary) {
        /** Offset width of the node's own offsets (4 or 8), from its format. */
        int offsetWidth() {
            return switch (type.format()) {
                case "+L", "Z", "U" -> 8;
                default -> 4;
            };
        }
    }

    private static final String[] FIXED = {"c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "tdD", "tdm",
        "tts", "ttm", "ttu", "ttn", "tDs", "tDm", "tDu", "tDn", "tiM", "tiD", "tin", "tsu:UTC", "tsn:", "tss:Europe/Paris",
        "d:10,2", "d:38,-3", "d:60,3,256", "d:9,2,32", "d:18,3,64", "w:1", "w:3", "w:16"};
    private static final String[] ALL_FORMATS = {"n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "z",
        "u", "Z", "U", "tdD", "tdm", "tts", "ttm", "ttu", "ttn", "tDs", "tiM", "tiD", "tin", "tsu:UTC", "d:10,2",
        "d:60,3,256", "w:4", "w:16", "+l", "+L", "+vl", "+w:2", "+w:0", "+s", "+m", "+r", "+us:0,1", "+ud:0,1",
        "+ud:5", "+us:", "", "x", "d:39,2", "d:0,0", "w:-1", "w:", "+w:", "ts", "tsu", "vz", "vu", "+vL"};

    /** Formats that read int64 offsets or sizes. */
    private static final java.util.Set<String> WIDE = java.util.Set.of("Z", "U", "+L", "+vL", "vz", "vu");

    private final Fuzz.Mem mem;
    private Input in;
    private boolean narrowAllowed;
    /**
     * Valid trees for {@link MalformedArrow}: no random mutation follows, so the int32-offset layouts (u, z,
     * +l), views and run-end encoded arrays are generated directly, lists and strings get non-empty values
     * (every corruption has something to act on) and string bytes are ASCII.
     */
    private boolean exact;
    /** A type with int32 offsets was drawn (see {@link Input#narrowOffsets}). */
    private boolean narrowUsed;
    private final SplittableRandom r;
    private final List<MemorySegment> schemaNodes = new ArrayList<>();
    private final List<MemorySegment> arrayNodes = new ArrayList<>();
    private final List<MemorySegment> buffers = new ArrayList<>();
    // buffers** and children** arrays, 8 slots each
    private final List<MemorySegment> bufferArrays = new ArrayList<>();
    private final List<MemorySegment> schemaChildArrays = new ArrayList<>();
    private final List<MemorySegment> arrayChildArrays = new ArrayList<>();
    private final List<MemorySegment> strings = new ArrayList<>();

    ArrowFuzz(Fuzz.Mem mem) {
        this.mem = mem;
        this.r = mem.r;
    }

    Input generate() {
        Input in = begin();
        narrowAllowed = r.nextInt(4) == 0;
        MemorySegment rootArray = rootArray(in);
        long length = r.nextInt(13);
        long offset = r.nextInt(4) == 0 ? r.nextInt(1, 4) : 0;
        in.root = node(in.schema, rootArray, r.nextInt(100) == 0 ? deepChain(r.nextInt(58, 72)) : randomType(0), length, offset,
                r.nextInt(4) == 0, true);
        in.narrowOffsets = narrowUsed;
        ArrowSchema.release(in.schema, Fuzz.SCHEMA_RELEASE);
        ArrowArray.release(rootArray, Fuzz.ARRAY_RELEASE);
        fillSpareSlots();
        int mutations = switch (r.nextInt(10)) {
            case 0, 1, 2 -> 0;
            case 3, 4, 5, 6 -> 1;
            default -> r.nextInt(2, 5);
        };
        for (int i = 0; i < mutations; i++) {
            mutate(in, rootArray);
        }
        in.schemaReleased = ArrowSchema.release(in.schema).address() == 0;
        in.arrayReleased = ArrowArray.release(rootArray).address() == 0;
        return in;
    }

    /**
     * A valid tree whose root is {@code root}, {@code length} elements after a random offset of 0 to 2,
     * with no mutation: {@link MalformedArrow} corrupts it. The int32-offset layouts, views and run-end
     * encoded arrays may appear (see {@link #exact}).
     */
    Input generateExact(Type root, long length) {
        Input in = begin();
        exact = true;
        narrowAllowed = true;
        in.narrowOffsets = true;
        MemorySegment rootArray = rootArray(in);
        long offset = r.nextInt(3) == 0 ? r.nextInt(1, 3) : 0;
        in.root = node(in.schema, rootArray, root, length, offset, r.nextInt(3) == 0, true);
        ArrowSchema.release(in.schema, Fuzz.SCHEMA_RELEASE);
        ArrowArray.release(rootArray, Fuzz.ARRAY_RELEASE);
        return in;
    }

    /** A random type for {@link #generateExact}: every generated layout, views and run-end encoded included. */
    Type randomExactType(int depth) {
        exact = true;
        narrowAllowed = true;
        return switch (r.nextInt(depth >= 2 ? 4 : 8)) {
            case 0 -> Type.leaf(new String[] {"u", "z", "vu", "vz"}[r.nextInt(4)]);
            case 1, 2, 3 -> randomType(Math.max(depth, 2) + 1);
            case 4 -> new Type("+l", List.of(randomExactType(depth + 1)), null);
            case 5 -> new Type("+r", List.of(Type.leaf(new String[] {"s", "i", "l"}[r.nextInt(3)]).withNulls(Nulls.NONE),
                    randomExactType(depth + 1)), null);
            case 6 -> new Type("+s", List.of(randomExactType(depth + 1), randomExactType(depth + 1)), null);
            default -> randomType(depth);
        };
    }

    private Input begin() {
        Input in = new Input();
        this.in = in;
        data(0); // a spare buffer: pointer mutations always have a target, even for a tree without buffers
        return in;
    }

    /** Allocates the root array (or device array) and schema structs; returns the ArrowArray part. */
    private MemorySegment rootArray(Input in) {
        in.device = r.nextInt(3) == 0;
        MemorySegment rootArray;
        if (in.device) {
            in.array = mem.struct(ArrowDeviceArray.sizeof());
            rootArray = in.array.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
            ArrowDeviceArray.device_type(in.array, 1);
            ArrowDeviceArray.device_id(in.array, r.nextBoolean() ? -1 : 0);
        } else {
            in.array = mem.struct(ArrowArray.sizeof());
            rootArray = in.array;
        }
        in.schema = mem.struct(ArrowSchema.sizeof());
        return rootArray;
    }

    // ------------------------------------------------------------------------------------------ types

    /** A type: format, children, optional dictionary value type (this node then is the index type). */
    private Type randomType(int depth) {
        int pick = r.nextInt(depth >= 3 ? 5 : 12);
        return switch (pick) {
            case 0 -> new Type("b", List.of(), null);
            case 1 -> new Type(r.nextBoolean() ? "U" : "Z", List.of(), null);
            case 2 -> new Type(r.nextBoolean() ? "U" : "Z", List.of(), null);
            case 3 -> new Type(r.nextInt(20) == 0 ? "n" : FIXED[r.nextInt(FIXED.length)], List.of(), null);
            case 4 -> new Type(new String[] {"c", "s", "i", "l", "C", "I"}[r.nextInt(6)], List.of(),
                    new Type(new String[] {"u", "i", "g", "Z", "b"}[r.nextInt(5)], List.of(), null));
            case 5, 6 -> new Type("+L", List.of(randomType(depth + 1)), null);
            case 7 -> new Type("+w:" + r.nextInt(0, 4), List.of(randomType(depth + 1)), null);
            case 8, 9 -> {
                int n = r.nextInt(0, 4);
                List<Type> cs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    cs.add(randomType(depth + 1));
                }
                yield new Type("+s", cs, null);
            }
            default -> {
                if (narrowAllowed && r.nextBoolean()) {
                    narrowUsed = true;
                    yield r.nextBoolean() ? new Type("+vl", List.of(randomType(depth + 1)), null)
                            : new Type("+ud:0,1", List.of(randomType(depth + 1), randomType(depth + 1)), null);
                }
                yield new Type("+us:0,1", List.of(randomType(depth + 1), randomType(depth + 1)), null);
            }
        };
    }

    /** Structs nested {@code depth} levels deep around an int32 leaf: the importers' 64-level limit. */
    private static Type deepChain(int depth) {
        Type t = new Type("i", List.of(), null);
        for (int i = 0; i < depth; i++) {
            t = new Type(i % 2 == 0 ? "+s" : "+w:1", List.of(t), null);
        }
        return t;
    }

    static int fixedWidth(String f) {
        switch (f) {
            case "c", "C": return 1;
            case "s", "S", "e": return 2;
            case "i", "I", "f", "tdD", "tts", "ttm", "tiM": return 4;
            case "tin": return 16;
            default: break;
        }
        if (f.startsWith("d:")) {
            return f.endsWith(",256") ? 32 : f.endsWith(",32") ? 4 : f.endsWith(",64") ? 8 : 16;
        }
        if (f.startsWith("w:")) {
            return Integer.parseInt(f.substring(2));
        }
        return 8;
    }

    // ------------------------------------------------------------------------------------------ build

    private MemorySegment pointerArray(List<MemorySegment> kind) {
        MemorySegment p = mem.struct(8 * 8);
        kind.add(p);
        return p;
    }

    /** Writes schema and array node for {@code t}: {@code offset + length} elements are backed. */
    private Built node(MemorySegment s, MemorySegment a, Type t, long length, long offset, boolean nulls, boolean root) {
        nulls = t.nulls == Nulls.RANDOM ? nulls : t.nulls == Nulls.SOME;
        if (exact && t.format.startsWith("+w:") && (offset + length) * Long.parseLong(t.format.substring(3)) > EXACT_MAX_COUNT) {
            t = new Type("+s", t.children, null, t.nulls); // a fixed-size list this long would outgrow the buffers
        }
        schemaNodes.add(s);
        arrayNodes.add(a);
        MemorySegment fmt = mem.string(t.format);
        strings.add(fmt);
        ArrowSchema.format(s, fmt);
        MemorySegment name = mem.string(root ? "" : "f" + r.nextInt(100));
        strings.add(name);
        ArrowSchema.name(s, name);
        if (r.nextInt(8) == 0 && !exact) {
            ArrowSchema.metadata(s, metadata());
        }
        ArrowSchema.flags(s, t.nulls == Nulls.NONE ? 0 : nulls || r.nextBoolean() ? 2 : 0);
        if (!root) {
            ArrowSchema.release(s, Fuzz.CHILD_RELEASE);
            ArrowArray.release(a, Fuzz.CHILD_RELEASE);
        }
        long n = offset + length;
        ArrowArray.length(a, length);
        ArrowArray.offset(a, offset);
        List<MemorySegment> bufs = new ArrayList<>();
        long nullCount = 0;
        String f = t.format;
        boolean hasValidity = !f.equals("n") && !f.startsWith("+u") && !f.equals("+r");
        long[] runEnds = null;
        if (hasValidity) {
            if (nulls && n > 0) {
                MemorySegment v = mem.buffer(0);
                buffers.add(v);
                for (long i = 0; i < n; i++) {
                    // valid bits only where the lattice allows a set bit (element i % 64 < 14)
                    if (r.nextInt(4) != 0 && (i & 63) < 14) {
                        v.set(JAVA_BYTE, i >>> 3, (byte) (v.get(JAVA_BYTE, i >>> 3) | (1 << (i & 7))));
                    } else if (i >= offset) {
                        nullCount++;
                    }
                }
                bufs.add(v);
            } else {
                bufs.add(MemorySegment.NULL);
            }
        }
        List<long[]> childSpans = new ArrayList<>(); // {length, offset}
        if (t.dictionary != null || (t.children.isEmpty() && !f.startsWith("+"))) {
            switch (f) {
                case "n" -> nullCount = length;
                case "b" -> bufs.add(data((n + 7) / 8));
                case "Z", "U" -> addOffsetsAndData(bufs, n, 8);
                case "z", "u" -> {
                    if (exact) {
                        addOffsetsAndData(bufs, n, 4);
                    } else {
                        bufs.add(data(n * 8)); // outside exact mode: an int32-offset layout is only reached by mutation
                    }
                }
                case "vu", "vz" -> {
                    if (exact) {
                        addViews(bufs, n);
                    } else {
                        bufs.add(data(n * 8));
                    }
                }
                default -> {
                    int w = fixedWidth(f);
                    MemorySegment d = data(n * w);
                    if (t.dictionary != null) {
                        // indices in [0, dictionary length)
                        for (long i = 0; i < n; i++) {
                            d.asSlice(i * w, w).fill((byte) 0);
                            if (((i * w) & 7) == 0) { // lattice: only bytes at 8k are free
                                d.set(JAVA_BYTE, i * w, (byte) r.nextInt(3));
                            }
                        }
                    } else if (exact) {
                        inRange(d, f, n, w);
                    }
                    bufs.add(d);
                }
            }
        } else if (f.equals("+L") || f.equals("+l")) {
            long[] offs = offsets(n);
            bufs.add(offsetsBuffer(offs, f.equals("+L") ? 8 : 4));
            childSpans.add(new long[] {offs[(int) n], 0});
        } else if (f.equals("+r")) {
            // run ends: strictly increasing, the last at least offset + length
            int runs = n == 0 ? 0 : r.nextInt(1, (int) Math.min(n, 6) + 1);
            runEnds = new long[runs];
            java.util.TreeSet<Long> cuts = new java.util.TreeSet<>();
            while (cuts.size() < runs - 1) {
                cuts.add((long) r.nextInt(1, (int) n));
            }
            int j = 0;
            for (long cut : cuts) {
                runEnds[j++] = cut;
            }
            if (runs > 0) {
                runEnds[runs - 1] = n + (r.nextInt(4) == 0 ? r.nextInt(1, 4) : 0);
            }
            childSpans.add(new long[] {runs, 0});
            childSpans.add(new long[] {runs, 0});
        } else if (f.equals("+vl")) {
            int c = r.nextInt(0, 17);
            MemorySegment offs = data(0);
            MemorySegment sizes = data(0);
            for (long i = 0; i < n; i++) {
                int o = r.nextInt(0, c + 1);
                offs.setAtIndex(JAVA_INT_UNALIGNED, i, o);
                sizes.setAtIndex(JAVA_INT_UNALIGNED, i, r.nextInt(0, c - o + 1));
            }
            bufs.add(offs);
            bufs.add(sizes);
            childSpans.add(new long[] {c, 0});
        } else if (f.startsWith("+ud")) {
            MemorySegment types = data(0);
            MemorySegment offs = data(0);
            long[] counts = new long[2];
            for (long i = 0; i < n; i++) {
                int c = r.nextInt(2);
                types.set(JAVA_BYTE, i, (byte) c);
                offs.setAtIndex(JAVA_INT_UNALIGNED, i, (int) counts[c]++);
            }
            bufs.add(types);
            bufs.add(offs);
            childSpans.add(new long[] {counts[0], 0});
            childSpans.add(new long[] {counts[1], 0});
        } else if (f.startsWith("+w:")) {
            long size = Long.parseLong(f.substring(3));
            childSpans.add(new long[] {exact ? n * size : n * Math.min(size, MAX_COUNT / Math.max(n, 1)), 0});
        } else if (f.equals("+s")) {
            for (int i = 0; i < t.children.size(); i++) {
                long extraOffset = r.nextInt(4) == 0 ? r.nextInt(1, 3) : 0;
                childSpans.add(new long[] {n, extraOffset});
            }
        } else if (f.startsWith("+u")) {
            MemorySegment types = data(0);
            for (long i = 0; i < n; i++) {
                // type ids 0 and 1; lattice: only bytes at 8k, 8k+1 may be non-zero
                types.set(JAVA_BYTE, i, (byte) ((i & 7) < 2 ? r.nextInt(2) : 0));
            }
            bufs.add(types);
            for (int i = 0; i < t.children.size(); i++) {
                childSpans.add(new long[] {n, 0});
            }
        }
        ArrowArray.null_count(a, nullCount > 0 && r.nextInt(4) == 0 ? -1 : nullCount);
        MemorySegment bp = pointerArray(bufferArrays);
        for (int i = 0; i < bufs.size(); i++) {
            bp.setAtIndex(ADDRESS, i, bufs.get(i));
        }
        ArrowArray.n_buffers(a, bufs.size());
        ArrowArray.buffers(a, bp);
        int nc = t.children.size();
        ArrowSchema.n_children(s, nc);
        ArrowArray.n_children(a, nc);
        List<Built> builtChildren = new ArrayList<>(nc);
        Built builtDictionary = null;
        if (nc > 0) {
            MemorySegment sc = pointerArray(schemaChildArrays);
            MemorySegment ac = pointerArray(arrayChildArrays);
            for (int i = 0; i < nc; i++) {
                MemorySegment cs = mem.struct(ArrowSchema.sizeof());
                MemorySegment ca = mem.struct(ArrowArray.sizeof());
                sc.setAtIndex(ADDRESS, i, cs);
                ac.setAtIndex(ADDRESS, i, ca);
                long[] span = childSpans.get(i);
                Type ct = t.children.get(i);
                long childLength = exact ? span[0] : Math.min(span[0], MAX_COUNT - span[1]);
                builtChildren.add(node(cs, ca, ct, childLength, span[1], r.nextInt(3) == 0, false));
            }
            ArrowSchema.children(s, sc);
            ArrowArray.children(a, ac);
        }
        if (t.dictionary != null) {
            MemorySegment ds = mem.struct(ArrowSchema.sizeof());
            MemorySegment da = mem.struct(ArrowArray.sizeof());
            builtDictionary = node(ds, da, t.dictionary, 3, 0, r.nextInt(3) == 0, false);
            ArrowSchema.dictionary(s, ds);
            ArrowArray.dictionary(a, da);
        }
        if (runEnds != null && runEnds.length > 0) {
            Built ends = builtChildren.get(0);
            int w = fixedWidth(ends.type.format());
            MemorySegment b = ends.buffers.get(1);
            for (int i = 0; i < runEnds.length; i++) {
                writeInt(b, ends.offset + i, w, runEnds[i]);
            }
        }
        return new Built(t, s, a, length, offset, bufs, bp, builtChildren, builtDictionary);
    }

    /** Writes {@code v} as a little-endian integer of {@code width} bytes at element {@code index}. */
    static void writeInt(MemorySegment b, long index, int width, long v) {
        switch (width) {
            case 1 -> b.set(JAVA_BYTE, index, (byte) v);
            case 2 -> b.setAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, index, (short) v);
            case 4 -> b.setAtIndex(JAVA_INT_UNALIGNED, index, (int) v);
            default -> b.setAtIndex(JAVA_LONG_UNALIGNED, index, v);
        }
    }

    /**
     * String or binary views (exact mode): each element inline (at most 12 bytes) or in one of one or two
     * variadic buffers at a small offset; the variadic sizes buffer declares each buffer's used bytes.
     */
    private void addViews(List<MemorySegment> bufs, long n) {
        int variadic = r.nextInt(3);
        MemorySegment views = data(0);
        MemorySegment[] data = new MemorySegment[variadic];
        long[] used = new long[variadic];
        for (int b = 0; b < variadic; b++) {
            data[b] = data(0);
            used[b] = r.nextInt(0, 8);
        }
        for (long i = 0; i < n; i++) {
            long at = i * 16;
            boolean inline = variadic == 0 || (i > 0 && r.nextBoolean());
            int size = inline ? r.nextInt(0, 13) : r.nextInt(13, 40);
            views.set(JAVA_INT_UNALIGNED, at, size);
            if (inline) {
                for (int k = 0; k < size; k++) {
                    views.set(JAVA_BYTE, at + 4 + k, (byte) r.nextInt('a', 'z' + 1));
                }
                continue;
            }
            int b = r.nextInt(variadic);
            long off = used[b] + r.nextInt(0, 4);
            for (int k = 0; k < size; k++) {
                data[b].set(JAVA_BYTE, off + k, (byte) r.nextInt('a', 'z' + 1));
            }
            MemorySegment.copy(data[b], off, views, at + 4, 4); // the prefix
            views.set(JAVA_INT_UNALIGNED, at + 8, b);
            views.set(JAVA_INT_UNALIGNED, at + 12, (int) off);
            used[b] = off + size;
        }
        bufs.add(views);
        MemorySegment sizes = data(0);
        for (int b = 0; b < variadic; b++) {
            bufs.add(data[b]);
            sizes.setAtIndex(JAVA_LONG_UNALIGNED, b, used[b] + (r.nextBoolean() ? 0 : r.nextInt(1, 8)));
        }
        bufs.add(sizes);
    }

    /**
     * Exact mode: rewrites the {@code n} values of a decimal, date64 or time32 / time64 buffer into what FULL
     * accepts (decimals within their precision, either sign; date64 whole days; times within one day), as a
     * valid tree must be. {@link MalformedArrow.Malformation#DECIMAL_OUT_OF_PRECISION} breaks one of them on purpose.
     */
    private void inRange(MemorySegment d, String f, long n, int w) {
        if (f.startsWith("d:")) {
            int precision = Integer.parseInt(f.substring(2, f.indexOf(',')));
            for (long i = 0; i < n; i++) {
                int digits = r.nextInt(precision + 1);
                java.math.BigInteger v = new java.math.BigInteger(digits * 4, new java.util.Random(r.nextLong()))
                        .mod(java.math.BigInteger.TEN.pow(digits));
                if (i == 0 && r.nextInt(4) == 0) {
                    v = java.math.BigInteger.TEN.pow(precision).subtract(java.math.BigInteger.ONE); // the largest that fits
                }
                writeDecimal(d, i, w, r.nextBoolean() ? v.negate() : v);
            }
        } else if (f.equals("tdm")) {
            for (long i = 0; i < n; i++) {
                d.setAtIndex(JAVA_LONG_UNALIGNED, i, (r.nextInt(-40_000, 40_000)) * 86_400_000L);
            }
        } else if (f.startsWith("tt")) {
            long day = switch (f) {
                case "tts" -> 86_400L;
                case "ttm" -> 86_400_000L;
                case "ttu" -> 86_400_000_000L;
                default -> 86_400_000_000_000L;
            };
            for (long i = 0; i < n; i++) {
                long v = r.nextInt(8) == 0 ? day - 1 : r.nextLong(day);
                if (w == 4) {
                    d.setAtIndex(JAVA_INT_UNALIGNED, i, (int) v);
                } else {
                    d.setAtIndex(JAVA_LONG_UNALIGNED, i, v);
                }
            }
        }
    }

    /** Writes {@code v} as element {@code i} of a decimal buffer of {@code w}-byte little-endian two's complement values. */
    static void writeDecimal(MemorySegment d, long i, int w, java.math.BigInteger v) {
        byte[] be = v.toByteArray();
        if (be.length > w) {
            throw new IllegalArgumentException(v + " does not fit " + w + " bytes");
        }
        for (int k = 0; k < w; k++) {
            byte b = k < be.length ? be[be.length - 1 - k] : (byte) (v.signum() < 0 ? -1 : 0);
            d.set(JAVA_BYTE, i * w + k, b);
        }
    }

    private MemorySegment data(long bytes) {
        MemorySegment d = mem.buffer(bytes);
        buffers.add(d);
        return d;
    }

    private long[] offsets(long n) {
        long[] offs = new long[(int) n + 1];
        offs[0] = r.nextInt(4) == 0 ? r.nextInt(1, 4) : 0;
        for (int i = 1; i <= n; i++) {
            offs[i] = Math.min(MAX_COUNT, offs[i - 1] + r.nextInt(exact ? 1 : 0, 4));
        }
        return offs;
    }

    private MemorySegment offsetsBuffer(long[] offs, int width) {
        MemorySegment b = mem.buffer(0);
        for (int i = 0; i < offs.length; i++) {
            writeInt(b, i, width, offs[i]);
        }
        buffers.add(b);
        return b;
    }

    private void addOffsetsAndData(List<MemorySegment> bufs, long n, int width) {
        long[] offs = offsets(n);
        bufs.add(offsetsBuffer(offs, width));
        MemorySegment d = data(0);
        for (long i = 0; i < offs[(int) n]; i++) {
            // the lattice: byte 8k any (here ASCII, now and then a stray high byte), 8k+1 below 0x40, others 0
            long k = i & 7;
            byte b = exact ? (byte) r.nextInt('a', 'z' + 1)
                    : k == 0 ? (byte) (r.nextInt(40) == 0 ? r.nextInt(256) : r.nextInt('a', 'z' + 1))
                    : k == 1 ? (byte) r.nextInt('0', '9' + 1) : 0;
            d.set(JAVA_BYTE, i, b);
        }
        bufs.add(d);
    }

    private MemorySegment metadata() {
        MemorySegment m = mem.buffer(0);
        int pairs = r.nextInt(0, 3);
        long p = 0;
        m.set(JAVA_INT_UNALIGNED, p, pairs);
        p += 4;
        for (int i = 0; i < pairs * 2; i++) {
            int len = r.nextInt(0, 6);
            m.set(JAVA_INT_UNALIGNED, p, len);
            p += 4;
            for (int j = 0; j < len; j++) {
                m.set(JAVA_BYTE, p++, (byte) r.nextInt('a', 'z' + 1));
            }
        }
        return m;
    }

    private void fillSpareSlots() {
        // slots past the real counts hold valid pointers of the right kind (or NULL): an importer that
        // reads past n_buffers / n_children reads garbage that is at least memory-safe
        spare(bufferArrays, buffers);
        spare(schemaChildArrays, schemaNodes);
        spare(arrayChildArrays, arrayNodes);
    }

    private void spare(List<MemorySegment> arrays, List<MemorySegment> targets) {
        for (MemorySegment p : arrays) {
            for (int i = 0; i < 8; i++) {
                if (p.getAtIndex(ADDRESS, i).address() == 0 && r.nextInt(3) == 0) {
                    p.setAtIndex(ADDRESS, i, pick(targets));
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------ mutations

    private <T> T pick(List<T> l) {
        return l.get(r.nextInt(l.size()));
    }

    /** A count, length or offset: small, zero, negative or the most negative long (never a large positive). */
    private long count() {
        return switch (r.nextInt(10)) {
            case 0 -> -1;
            case 1 -> Long.MIN_VALUE;
            case 2 -> r.nextInt(-3, 0);
            case 3 -> 0;
            case 4 -> Integer.MIN_VALUE;
            default -> r.nextInt(0, MAX_COUNT + 1);
        };
    }

    private void mutate(Input in, MemorySegment rootArray) {
        int what = r.nextInt(20);
        if (what < 6) {
            mutateArrayNode(in, pick(arrayNodes));
        } else if (what < 11) {
            mutateSchemaNode(in, pick(schemaNodes));
        } else if (what < 16) {
            mutateBufferContents(in);
        } else if (what < 18 && in.device) {
            mutateDevice(in);
        } else if (what == 18) {
            in.mutations.add("root array released");
            ArrowArray.release(rootArray, MemorySegment.NULL);
        } else {
            in.mutations.add("root schema released");
            ArrowSchema.release(in.schema, MemorySegment.NULL);
        }
    }

    private void mutateArrayNode(Input in, MemorySegment a) {
        int what = r.nextInt(11);
        if (in.narrowOffsets && (what == 6 || what == 9)) {
            return; // a swapped child or dictionary could be read under an int64-offset format
        }
        switch (what) {
            case 0 -> { long v = count(); ArrowArray.length(a, v); in.mutations.add("length=" + v); }
            case 1 -> { long v = r.nextBoolean() ? count() : r.nextInt(-1, 3); ArrowArray.null_count(a, v); in.mutations.add("null_count=" + v); }
            case 2 -> { long v = count(); ArrowArray.offset(a, v); in.mutations.add("offset=" + v); }
            case 3 -> { long v = r.nextBoolean() ? r.nextInt(-1, 9) : count() < 0 ? Long.MIN_VALUE : r.nextInt(0, 9); ArrowArray.n_buffers(a, v); in.mutations.add("n_buffers=" + v); }
            case 4 -> { long v = r.nextBoolean() ? r.nextInt(-1, 9) : Long.MIN_VALUE; ArrowArray.n_children(a, v); in.mutations.add("n_children=" + v); }
            case 5 -> {
                if (ArrowArray.buffers(a).address() == 0) {
                    return;
                }
                MemorySegment bp = ArrowArray.buffers(a).reinterpret(64);
                int i = r.nextInt(8);
                MemorySegment old = bp.getAtIndex(ADDRESS, i);
                MemorySegment v = switch (r.nextInt(4)) {
                    case 0 -> MemorySegment.NULL;
                    case 1 -> in.narrowOffsets ? MemorySegment.NULL : pick(buffers);
                    case 2 -> old.address() == 0 ? old : MemorySegment.ofAddress(old.address() + 8L * r.nextInt(1, 9));
                    default -> old.address() == 0 && !in.narrowOffsets ? pick(buffers) : old;
                };
                bp.setAtIndex(ADDRESS, i, v);
                in.mutations.add("buffers[" + i + "] swapped");
            }
            case 6 -> {
                MemorySegment ch = ArrowArray.children(a);
                if (ch.address() == 0) {
                    ArrowArray.children(a, pointerArray(arrayChildArrays));
                    in.mutations.add("children array added");
                } else {
                    int i = r.nextInt(8);
                    ch.reinterpret(64).setAtIndex(ADDRESS, i, r.nextInt(3) == 0 ? MemorySegment.NULL : pick(arrayNodes));
                    in.mutations.add("children[" + i + "] swapped (cycles possible)");
                }
            }
            case 7 -> { ArrowArray.children(a, MemorySegment.NULL); in.mutations.add("children=NULL"); }
            case 8 -> { ArrowArray.buffers(a, MemorySegment.NULL); in.mutations.add("buffers=NULL"); }
            case 9 -> { ArrowArray.dictionary(a, r.nextBoolean() ? MemorySegment.NULL : pick(arrayNodes)); in.mutations.add("dictionary swapped"); }
            default -> {
                if (ArrowArray.release(a).equals(Fuzz.CHILD_RELEASE)) {
                    ArrowArray.release(a, MemorySegment.NULL);
                    in.mutations.add("child array released");
                }
            }
        }
    }

    private void mutateSchemaNode(Input in, MemorySegment s) {
        int what = r.nextInt(9);
        if (in.narrowOffsets && (what == 2 || what == 4 || what == 5)) {
            return; // a swapped format, child or dictionary could describe int32 offsets as int64 ones
        }
        switch (what) {
            case 0, 1 -> {
                String old = ArrowSchema.format(s).address() == 0 ? "" : ArrowSchema.format(s).reinterpret(64).getString(0);
                String f = mutateFormat(old);
                if (f != null && !(in.narrowOffsets && WIDE.contains(f))) {
                    MemorySegment m = mem.string(f);
                    strings.add(m);
                    ArrowSchema.format(s, m);
                    in.mutations.add("format '" + old + "'->'" + f + "'");
                }
            }
            case 2 -> {
                if (r.nextBoolean()) {
                    ArrowSchema.format(s, r.nextBoolean() ? MemorySegment.NULL : pick(strings));
                    in.mutations.add("format pointer swapped");
                } else {
                    // a name with bytes that are not UTF-8 (a lone continuation byte, a truncated sequence)
                    MemorySegment name = mem.string(new String[] {"\u0080", "a\u00c3", "\u00ff\u00fe", "\u00e2\u0082"}[r.nextInt(4)]);
                    strings.add(name);
                    ArrowSchema.name(s, name);
                    in.mutations.add("name not UTF-8");
                }
            }
            case 3 -> { long v = r.nextBoolean() ? r.nextInt(-1, 9) : Long.MIN_VALUE; ArrowSchema.n_children(s, v); in.mutations.add("schema n_children=" + v); }
            case 4 -> {
                MemorySegment ch = ArrowSchema.children(s);
                if (ch.address() == 0) {
                    ArrowSchema.children(s, r.nextBoolean() ? MemorySegment.NULL : pointerArrayOfSchemas());
                } else {
                    ch.reinterpret(64).setAtIndex(ADDRESS, r.nextInt(8), r.nextInt(3) == 0 ? MemorySegment.NULL : pick(schemaNodes));
                }
                in.mutations.add("schema children swapped (cycles possible)");
            }
            case 5 -> { ArrowSchema.dictionary(s, r.nextBoolean() ? MemorySegment.NULL : pick(schemaNodes)); in.mutations.add("schema dictionary swapped"); }
            case 6 -> { long v = r.nextBoolean() ? r.nextInt(0, 8) : r.nextLong(); ArrowSchema.flags(s, v); in.mutations.add("flags=" + v); }
            case 7 -> {
                MemorySegment m = ArrowSchema.metadata(s);
                if (m.address() == 0) {
                    ArrowSchema.metadata(s, metadata());
                } else if (r.nextBoolean()) {
                    // more pairs than written: the reader walks into zeros (empty keys and values)
                    int v = r.nextInt(-2, 9);
                    m.reinterpret(8).set(JAVA_INT_UNALIGNED, 0, v);
                    in.mutations.add("metadata pairs=" + v);
                } else if (m.reinterpret(8).get(JAVA_INT_UNALIGNED, 0) > 0) {
                    // only a negative length: a positive change would shift the parse into key bytes read as
                    // a length, claiming memory the importer cannot know is not there (no blob size in C)
                    int v = r.nextBoolean() ? -1 : Integer.MIN_VALUE;
                    m.reinterpret(8).set(JAVA_INT_UNALIGNED, 4, v);
                    in.mutations.add("metadata key length=" + v);
                }
            }
            default -> {
                if (ArrowSchema.release(s).equals(Fuzz.CHILD_RELEASE)) {
                    ArrowSchema.release(s, MemorySegment.NULL);
                    in.mutations.add("child schema released");
                }
            }
        }
    }

    private MemorySegment pointerArrayOfSchemas() {
        MemorySegment p = pointerArray(schemaChildArrays);
        for (int i = 0; i < 8; i++) {
            p.setAtIndex(ADDRESS, i, pick(schemaNodes));
        }
        return p;
    }

    private String mutateFormat(String old) {
        switch (r.nextInt(5)) {
            case 0, 1: return ALL_FORMATS[r.nextInt(ALL_FORMATS.length)];
            case 2: return old.isEmpty() ? old : old.substring(0, r.nextInt(old.length()));
            case 3: return r.nextInt(4) == 0 ? old + (char) r.nextInt(0x80, 0x100) // not UTF-8 on its own
                    : old + ":,-x+".charAt(r.nextInt(5));
            default: {
                if (old.isEmpty()) {
                    return null;
                }
                char[] cs = old.toCharArray();
                int i = r.nextInt(cs.length);
                boolean digit = Character.isDigit(cs[i]);
                // a digit stays a digit (widths stay two-digit at most: w:96 x 128 elements fits a buffer)
                cs[i] = digit ? (char) ('0' + r.nextInt(10)) : "nbcCsSiIlLefgzZuUtdDmsunMi+wr:,-".charAt(r.nextInt(32));
                return new String(cs);
            }
        }
    }

    private void mutateBufferContents(Input in) {
        // offsets, type ids, dictionary indices and lengths live in the buffers: overwrite an 8-aligned
        // word with a small or negative int64 (read as int32 pairs it stays small or negative too), or the
        // byte at 8k (lattice: the only byte free to take any value)
        MemorySegment b = pick(buffers);
        int at = r.nextInt(0, 24);
        long v = switch (r.nextInt(4)) {
            case 0 -> r.nextInt(-3, 0);
            case 1 -> r.nextInt(0, 8);
            case 2 -> r.nextInt(0, 4097);
            default -> r.nextInt(0, 256);
        };
        if (r.nextBoolean()) {
            b.setAtIndex(JAVA_LONG_UNALIGNED, at, v);
        } else {
            b.set(JAVA_BYTE, 8L * at, (byte) v);
        }
        in.mutations.add("buffer content word " + at + "=" + v);
    }

    private void mutateDevice(Input in) {
        switch (r.nextInt(4)) {
            case 0 -> { int v = new int[] {2, 3, 13, 0, 99, -1, 14}[r.nextInt(7)]; ArrowDeviceArray.device_type(in.array, v); in.mutations.add("device_type=" + v); }
            case 1 -> { long v = new long[] {5, -2, Long.MIN_VALUE}[r.nextInt(3)]; ArrowDeviceArray.device_id(in.array, v); in.mutations.add("device_id=" + v); }
            case 2 -> { ArrowDeviceArray.sync_event(in.array, pick(buffers)); in.mutations.add("sync_event set"); }
            default -> {
                int i = r.nextInt(3);
                in.array.set(JAVA_LONG_UNALIGNED, ArrowDeviceArray.reserved$offset() + 8L * i, 1);
                in.mutations.add("reserved[" + i + "]=1");
            }
        }
    }
}
